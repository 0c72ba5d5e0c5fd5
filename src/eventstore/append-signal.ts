/**
 * Wakes idle subscribers when an append commits, so that nothing polls while the store is quiet.
 * A waiter registers synchronously after a read that found nothing; because appends in this process are
 * synchronous too, no append can slip between that read and the registration.
 */
export class AppendSignal {
  private waiters = new Set<() => void>();
  private closed = false;

  get isClosed(): boolean {
    return this.closed;
  }

  notify(): void {
    const waiters = [...this.waiters];
    this.waiters.clear();
    for (const wake of waiters) wake();
  }

  /** Resolves on the next append, or at once when the store is closed. */
  next(): Promise<void> {
    if (this.closed) return Promise.resolve();
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
