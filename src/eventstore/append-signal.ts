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

/** Wake-ups a signal remembers for `wokeSince`: a subscriber that missed more reads again to be sure. */
const recentKept = 64;

export class AppendSignal {
  private readonly waiters = new Set<Waiter>();
  private closed = false;
  private notifications = 0;
  /** What the latest wake-ups said, the newest last: the last `recentKept` of them. */
  private readonly recent: (Appended | null)[] = [];

  /**
   * How many wake-ups were sent so far. A subscriber notes it before it reads, and asks `wokeSince` before
   * it sleeps: a wake-up sent while it was not waiting (its read in flight) reached nobody, and a commit it
   * announced after the read's snapshot would otherwise wait for the polling interval.
   */
  get notified(): number {
    return this.notifications;
  }

  /**
   * Whether a wake-up since the `since`-th may concern a reader of `eventTypes` (every type when undefined)
   * that has read up to `readTo`: a commit past it holding one of those types, one that says nothing of what
   * was appended, or more than are kept. A commit the read already covered (its wake-up came late, as on
   * PostgreSQL, where it is sent after the commit on a connection of its own) asks for no read again.
   */
  wokeSince(since: number, eventTypes: readonly string[] | undefined, readTo = -Infinity): boolean {
    const missed = this.notifications - since;
    if (missed <= 0) return false;
    if (missed > this.recent.length) return true;
    return this.recent
      .slice(-missed)
      .some(
        (appended) =>
          appended === null ||
          appended.types.size === 0 ||
          (appended.lastPosition > readTo &&
            (eventTypes === undefined || eventTypes.some((type) => appended.types.has(type)))),
      );
  }

  get isClosed(): boolean {
    return this.closed;
  }

  /** How many waits are registered now: one per idle subscriber, never more. */
  get waiting(): number {
    return this.waiters.size;
  }

  /** Wakes every waiter; `appended` is null when what changed is unknown (another process wrote). */
  notify(appended: Appended | null = null): void {
    this.notifications += 1;
    this.recent.push(appended);
    if (this.recent.length > recentKept) this.recent.shift();
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

/** Where a subscriber stands after a wake-up, read nothing: how far it may move, and whether it must read. */
export interface Unread {
  position: number;
  mustRead: boolean;
}

/**
 * The recent commits of this process to the embedded store, oldest first: what lets a subscriber tell,
 * without reading, that every event after its position is of types it does not read, including commits
 * made while it was busy and missed the wake-up. SQLite commits one at a time, so a commit that starts where
 * the previous one ended has nothing between them; one that starts further on had another process's
 * events before it, which only a read can show.
 */
export class CommitJournal {
  private readonly commits: Appended[] = [];

  constructor(private readonly capacity = 256) {}

  /** Where this process's last commit ended; 0 before its first. */
  get lastPosition(): number {
    return this.commits.at(-1)?.lastPosition ?? 0;
  }

  record(appended: Appended): void {
    this.commits.push(appended);
    if (this.commits.length > this.capacity * 2) this.commits.splice(0, this.capacity);
  }

  /**
   * Moves a subscriber at `position` that reads only `eventTypes` past every commit that follows on from it
   * and holds none of its types. It must read when a commit holds one of them, when a commit does not start
   * where it stands (another process's events, or the middle of a commit), or when it reads every type.
   */
  skip(position: number, eventTypes: readonly string[] | undefined): Unread {
    let at = position;
    for (const commit of this.commits) {
      if (commit.lastPosition <= at) continue;
      if (eventTypes === undefined || commit.firstPosition !== at) return { position: at, mustRead: true };
      if (eventTypes.some((type) => commit.types.has(type))) return { position: at, mustRead: true };
      at = commit.lastPosition;
    }
    return { position: at, mustRead: false };
  }
}
