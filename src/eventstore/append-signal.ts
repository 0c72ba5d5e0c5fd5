/**
 * Wakes idle subscribers when an append commits, so that nothing polls while the store is quiet.
 * A waiter registers synchronously after a read that found nothing; because appends in this process are
 * synchronous too, no append can slip between that read and the registration.
 */
/** What one commit appended: its event types and the position of its last event. */
export interface Appended {
  types: ReadonlySet<string>;
  lastPosition: number;
}

export class AppendSignal {
  private waiters = new Set<(appended: Appended | null) => void>();
  private closed = false;

  get isClosed(): boolean {
    return this.closed;
  }

  /** Wakes every waiter; `appended` is null when what changed is unknown (another process wrote). */
  notify(appended: Appended | null = null): void {
    const waiters = [...this.waiters];
    this.waiters.clear();
    for (const wake of waiters) wake(appended);
  }

  /** Resolves on the next append with what it appended, or with null at once when the store is closed. */
  next(): Promise<Appended | null> {
    if (this.closed) return Promise.resolve(null);
    return new Promise((resolve) => this.waiters.add(resolve));
  }

  close(): void {
    this.closed = true;
    this.notify();
  }
}

/** A promise that resolves when `stop` is called: what a subscription loop races its waits against. */
export const stopLatch = (): { stopped: () => boolean; stop: () => void; whenStopped: Promise<void> } => {
  let isStopped = false;
  let release = (): void => undefined;
  const whenStopped = new Promise<void>((resolve) => (release = resolve));
  return {
    stopped: () => isStopped,
    stop: () => {
      isStopped = true;
      release();
    },
    whenStopped,
  };
};

/**
 * Whether a subscriber caught up at the position before this commit can skip reading it: the commit holds
 * none of the types it reads, and nothing else was appended since (the head is still the commit's last
 * event). It then only moves its position, which saves every idle subscriber a read on every append.
 */
export const canSkip = (
  appended: Appended | null,
  eventTypes: readonly string[] | undefined,
  head: () => number,
): appended is Appended =>
  appended !== null &&
  eventTypes !== undefined &&
  !eventTypes.some((type) => appended.types.has(type)) &&
  head() === appended.lastPosition;
