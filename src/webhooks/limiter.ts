/** A first-in, first-out queue whose take is O(1) however long it grows (Array.shift copies the rest). */
class Queue<T> {
  private items: T[] = [];
  private head = 0;

  get length(): number {
    return this.items.length - this.head;
  }

  push(item: T): void {
    this.items.push(item);
  }

  take(): T | undefined {
    if (this.head >= this.items.length) return undefined;
    const item = this.items[this.head]!;
    this.head += 1;
    // Compacts once the consumed half dominates, so memory follows what still waits.
    if (this.head > 1024 && this.head * 2 > this.items.length) {
      this.items = this.items.slice(this.head);
      this.head = 0;
    }
    return item;
  }
}

/**
 * Runs tasks with at most `overall` at once, and at most `perKey` at once for any one key (a webhook
 * subscription): a receiver that hangs holds only its own slots, and everyone else's tasks go on. Each key
 * keeps its own queue, so a backlog of thousands for one key costs nothing when a slot frees: the next task
 * is found among the keys that wait, not by scanning every waiting task.
 */
export const keyedLimiter = (overall: number, perKey: number) => {
  let running = 0;
  const runningByKey = new Map<string, number>();
  /** The keys with waiting tasks, in the order they began to wait (a Map keeps insertion order). */
  const waiting = new Map<string, Queue<() => void>>();
  let idleWaiters: (() => void)[] = [];

  const hasSlot = (key: string) => running < overall && (runningByKey.get(key) ?? 0) < perKey;

  /** Takes a slot for the key; the function it returns gives the slot back (once). */
  const occupy = (key: string): (() => void) => {
    running += 1;
    runningByKey.set(key, (runningByKey.get(key) ?? 0) + 1);
    let released = false;
    return () => {
      if (released) return;
      released = true;
      running -= 1;
      const left = (runningByKey.get(key) ?? 1) - 1;
      if (left === 0) runningByKey.delete(key);
      else runningByKey.set(key, left);
      pump();
    };
  };

  const pump = () => {
    for (const [key, queue] of waiting) {
      if (running >= overall) break;
      while (queue.length > 0 && hasSlot(key)) queue.take()!();
      if (queue.length === 0) waiting.delete(key);
    }
    if (running === 0 && waiting.size === 0) {
      const waiters = idleWaiters;
      idleWaiters = [];
      for (const resolve of waiters) resolve();
    }
  };

  /**
   * Runs the task in a slot of the key's once one is free. The slot is given back when the task settles, or
   * earlier when the task calls `release`: an attempt done with its receiver, still writing its outcome.
   */
  const run = <T>(key: string, task: (release: () => void) => Promise<T>): Promise<T> =>
    new Promise<T>((resolve, reject) => {
      let queue = waiting.get(key);
      if (!queue) {
        queue = new Queue();
        waiting.set(key, queue);
      }
      queue.push(() => {
        const release = occupy(key);
        // A task that throws before its promise exists fails like one that rejects, and frees its slot.
        new Promise<T>((settle) => settle(task(release))).then(resolve, reject).finally(release);
      });
      pump();
    });

  /**
   * A slot taken at once, when the key has one free and none of its tasks waits (they came first); null
   * otherwise. The caller gives it back by calling the function returned.
   */
  const tryAcquire = (key: string): (() => void) | null =>
    !waiting.has(key) && hasSlot(key) ? occupy(key) : null;

  /** Resolves when nothing runs and nothing waits. */
  const idle = (): Promise<void> =>
    running === 0 && waiting.size === 0
      ? Promise.resolve()
      : new Promise((resolve) => idleWaiters.push(resolve));

  return { run, tryAcquire, idle };
};
