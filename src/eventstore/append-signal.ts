import type { Subscription } from './port.js';

/**
 * Wake-ups for idle subscribers of the embedded store. A wake-up is only a hint: a subscriber always reads
 * from its own checkpoint to the head, and it also looks at the head every `pollMs` however quiet the
 * signal is. So a lost, merged or foreign-process wake-up (another process appending to the same file)
 * delays an event by at most one polling interval and never skips it.
 */

/** What one commit of this process appended: its event types, and the head before and after it. */
export interface Appended {
  types: ReadonlySet<string>;
  /** The head position just before the commit: every event after it up to `lastPosition` is this commit's. */
  firstPosition: number;
  lastPosition: number;
}

type Waiter = (appended: Appended | null) => void;

/** How long an idle subscriber sleeps at most before it looks at the head again. */
export const defaultPollMs = 1000;

export class AppendSignal {
  private readonly waiters = new Set<Waiter>();
  private closed = false;

  get isClosed(): boolean {
    return this.closed;
  }

  /** How many waits are registered now: one per idle subscriber, never more. */
  get waiting(): number {
    return this.waiters.size;
  }

  /** Wakes every waiter; `appended` is null when what changed is unknown (another process wrote). */
  notify(appended: Appended | null = null): void {
    const waiters = [...this.waiters];
    this.waiters.clear();
    for (const wake of waiters) wake(appended);
  }

  /**
   * Resolves with what the next commit appended; with null after `timeoutMs`, when the latch is stopped or
   * poked, or at once when the store is closed. Nothing it registers outlives the wait.
   */
  next(timeoutMs: number, latch: StopLatch): Promise<Appended | null> {
    if (this.closed || latch.stopped()) return Promise.resolve(null);
    return new Promise((resolve) => {
      const finish: Waiter = (appended) => {
        clearTimeout(timer);
        this.waiters.delete(finish);
        latch.sleepers.delete(finish);
        resolve(appended);
      };
      const timer = setTimeout(finish, timeoutMs, null);
      this.waiters.add(finish);
      latch.sleepers.add(finish);
    });
  }

  close(): void {
    this.closed = true;
    this.notify();
  }
}

/** A subscription's stop switch. Stopping, or a poke, ends the subscription's current sleep at once. */
export interface StopLatch {
  stopped(): boolean;
  stop(): void;
  /** Ends the current sleep without stopping: there is work the signal does not know of (a replay). */
  poke(): void;
  readonly sleepers: Set<Waiter>;
}

export const stopLatch = (): StopLatch => {
  let isStopped = false;
  const sleepers = new Set<Waiter>();
  const wakeAll = () => {
    const waiting = [...sleepers];
    sleepers.clear();
    for (const wake of waiting) wake(null);
  };
  return {
    stopped: () => isStopped,
    stop: () => {
      isStopped = true;
      wakeAll();
    },
    poke: wakeAll,
    sleepers,
  };
};

/** A subscription that runs until its latch is stopped: stop() stops it and waits for the run to end. */
export const latchedSubscription = (
  run: (latch: StopLatch) => Promise<void>,
  latch: StopLatch = stopLatch(),
): Subscription => {
  const done = run(latch);
  return {
    done,
    stop: async () => {
      latch.stop();
      await done.catch(() => undefined);
    },
  };
};

/**
 * Whether a subscriber at `position` can skip reading this commit: it holds none of the types the
 * subscriber reads, the subscriber had read everything before it, and nothing was appended since (the head
 * is still the commit's last event). It then only moves its position, which saves every idle subscriber a
 * read on every append. Anything else (a foreign append, a merged wake-up) means: read.
 */
export const canSkip = (
  appended: Appended | null,
  position: number,
  eventTypes: readonly string[] | undefined,
  head: () => number,
): appended is Appended =>
  appended !== null &&
  eventTypes !== undefined &&
  position >= appended.firstPosition &&
  !eventTypes.some((type) => appended.types.has(type)) &&
  head() === appended.lastPosition;
