/**
 * Small concurrency tools that know nothing of any feature: a counting semaphore whose waits a signal can
 * cancel, and a race between a task and a signal. The CV worker bounds its runs with them (CV_CONCURRENCY).
 */

export interface Semaphore {
  /** Takes a slot, waiting first come, first served; rejects (and stops waiting) once the signal aborts. */
  acquire: (signal: AbortSignal) => Promise<void>;
  /** Gives a slot back: to the longest waiter, or to the pool when nobody waits. */
  release: () => void;
}

/** Counting semaphore of `size` slots whose waits end when the signal aborts. */
export const semaphore = (size: number): Semaphore => {
  let free = size;
  const waiting: (() => void)[] = [];
  return {
    acquire: (signal: AbortSignal): Promise<void> =>
      new Promise((resolve, reject) => {
        if (signal.aborted) return reject(new Error('stopping'));
        if (free > 0) {
          free -= 1;
          return resolve();
        }
        const wake = () => {
          signal.removeEventListener('abort', cancel);
          resolve();
        };
        const cancel = () => {
          const index = waiting.indexOf(wake);
          if (index >= 0) waiting.splice(index, 1);
          reject(new Error('stopping'));
        };
        signal.addEventListener('abort', cancel, { once: true });
        waiting.push(wake);
      }),
    release: () => {
      const next = waiting.shift();
      if (next) next();
      else free += 1;
    },
  };
};

/**
 * Settles with the task, or rejects with the signal's reason as soon as it aborts, whichever is first. The
 * task is not stopped by this (it should watch the signal itself); its caller just stops waiting for it.
 */
export const abortable = <T>(signal: AbortSignal, task: () => Promise<T>): Promise<T> =>
  new Promise<T>((resolve, reject) => {
    if (signal.aborted) return reject(signal.reason as Error);
    const onAbort = () => reject(signal.reason as Error);
    signal.addEventListener('abort', onAbort, { once: true });
    task()
      .then(resolve, reject)
      .finally(() => signal.removeEventListener('abort', onAbort));
  });
