/**
 * Runs tasks with at most `overall` at once, and at most `perKey` at once for any one key (a webhook
 * subscription): a receiver that hangs holds only its own slots, and everyone else's tasks go on.
 */
export const keyedLimiter = (overall: number, perKey: number) => {
  let running = 0;
  const runningByKey = new Map<string, number>();
  const waiting: { key: string; start: () => void }[] = [];
  let idleWaiters: (() => void)[] = [];

  const canStart = (key: string) => running < overall && (runningByKey.get(key) ?? 0) < perKey;

  const pump = () => {
    for (let index = 0; index < waiting.length && running < overall;) {
      const task = waiting[index]!;
      if (canStart(task.key)) {
        waiting.splice(index, 1);
        task.start();
      } else {
        index += 1;
      }
    }
    if (running === 0 && waiting.length === 0) {
      const waiters = idleWaiters;
      idleWaiters = [];
      for (const resolve of waiters) resolve();
    }
  };

  const run = <T>(key: string, task: () => Promise<T>): Promise<T> =>
    new Promise<T>((resolve, reject) => {
      waiting.push({
        key,
        start: () => {
          running += 1;
          runningByKey.set(key, (runningByKey.get(key) ?? 0) + 1);
          task()
            .then(resolve, reject)
            .finally(() => {
              running -= 1;
              const left = (runningByKey.get(key) ?? 1) - 1;
              if (left === 0) runningByKey.delete(key);
              else runningByKey.set(key, left);
              pump();
            });
        },
      });
      pump();
    });

  /** Resolves when nothing runs and nothing waits. */
  const idle = (): Promise<void> =>
    running === 0 && waiting.length === 0
      ? Promise.resolve()
      : new Promise((resolve) => idleWaiters.push(resolve));

  return { run, idle };
};
