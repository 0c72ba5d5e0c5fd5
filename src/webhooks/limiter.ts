/** A first-in, first-out queue whose take is O(1) however long it grows (Array.shift copies the rest). */
export class Queue<T> {
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

/** The tasks of one key waiting for a slot: those someone waits for (a test event) first. */
interface Waiting {
  group: string;
  urgent: Queue<() => void>;
  normal: Queue<() => void>;
}

export interface RunOptions {
  /** The key's group (a subscription's tenant), whose tasks hold at most `perGroup` slots at once. */
  group?: string;
  /** Ahead of the key's other waiting tasks: someone is waiting for this one's answer. */
  first?: boolean;
}

/** Adds one to a counter of a map, or takes one away, deleting it at zero. */
const count = (counts: Map<string, number>, key: string, by: 1 | -1) => {
  const next = (counts.get(key) ?? 0) + by;
  if (next <= 0) counts.delete(key);
  else counts.set(key, next);
};

/**
 * Runs tasks with at most `overall` at once, at most `perKey` at once for any one key (a webhook
 * subscription), and at most `perGroup` for any one group (a tenant): a receiver that hangs holds only its
 * own slots, a tenant with many hung receivers leaves the others `overall - perGroup`, and everyone else's
 * tasks go on. Each key keeps its own queue, so a backlog of thousands for one key costs nothing when a
 * slot frees: the next task is found among the keys that wait, not by scanning every waiting task.
 */
export const keyedLimiter = (overall: number, perKey: number, perGroup = overall) => {
  let running = 0;
  const runningByKey = new Map<string, number>();
  const runningByGroup = new Map<string, number>();
  /** The keys with waiting tasks, in the order they began to wait (a Map keeps insertion order). */
  const waiting = new Map<string, Waiting>();
  let idleWaiters: (() => void)[] = [];

  const hasSlot = (key: string, group: string) =>
    running < overall && (runningByKey.get(key) ?? 0) < perKey && (runningByGroup.get(group) ?? 0) < perGroup;

  /** Takes a slot for the key; the function it returns gives the slot back (once). */
  const occupy = (key: string, group: string): (() => void) => {
    running += 1;
    count(runningByKey, key, 1);
    count(runningByGroup, group, 1);
    let released = false;
    return () => {
      if (released) return;
      released = true;
      running -= 1;
      count(runningByKey, key, -1);
      count(runningByGroup, group, -1);
      pump();
    };
  };

  const startWaiting = () => {
    for (const [key, queued] of waiting) {
      if (running >= overall) break;
      while (queued.urgent.length + queued.normal.length > 0 && hasSlot(key, queued.group))
        (queued.urgent.take() ?? queued.normal.take())!();
      if (queued.urgent.length + queued.normal.length === 0) waiting.delete(key);
    }
    if (running === 0 && waiting.size === 0) {
      const waiters = idleWaiters;
      idleWaiters = [];
      for (const resolve of waiters) resolve();
    }
  };

  /**
   * Starts what waits and has a slot. Never re-entered: a task started here may give its slot back and
   * queue more of its key before it returns (an attempt claimed ahead that waited too long), and a nested
   * pass would empty and delete the key's queue, then the outer pass delete the new one made meanwhile,
   * whose tasks would then wait for ever. A call during a pass asks for one more pass instead.
   */
  let pumping = false;
  let again = false;
  const pump = () => {
    if (pumping) {
      again = true;
      return;
    }
    pumping = true;
    try {
      do {
        again = false;
        startWaiting();
      } while (again);
    } finally {
      pumping = false;
    }
  };

  /**
   * Runs the task in a slot of the key's once one is free. The slot is given back when the task settles, or
   * earlier when the task calls `release`: an attempt done with its receiver, still writing its outcome.
   */
  const run = <T>(
    key: string,
    task: (release: () => void) => Promise<T>,
    { group = key, first = false }: RunOptions = {},
  ): Promise<T> =>
    new Promise<T>((resolve, reject) => {
      let queued = waiting.get(key);
      if (!queued) {
        queued = { group, urgent: new Queue(), normal: new Queue() };
        waiting.set(key, queued);
      }
      (first ? queued.urgent : queued.normal).push(() => {
        const release = occupy(key, group);
        // A task that throws before its promise exists fails like one that rejects, and frees its slot.
        new Promise<T>((settle) => settle(task(release))).then(resolve, reject).finally(release);
      });
      pump();
    });

  /**
   * A slot taken at once, when the key has one free and none of its tasks waits (they came first); null
   * otherwise. The caller gives it back by calling the function returned.
   */
  const tryAcquire = (key: string, group = key): (() => void) | null =>
    !waiting.has(key) && hasSlot(key, group) ? occupy(key, group) : null;

  /** Resolves when nothing runs and nothing waits. */
  const idle = (): Promise<void> =>
    running === 0 && waiting.size === 0
      ? Promise.resolve()
      : new Promise((resolve) => idleWaiters.push(resolve));

  return { run, tryAcquire, idle };
};
