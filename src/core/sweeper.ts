/**
 * A sweep run every second by a plain timer: never two at once (a tick while one runs is skipped), none
 * started while `paused()` says so (a stop has begun), a failure reported and the next second tried again.
 * `stop` waits for the sweep in flight.
 */
export const everySecond = (
  sweep: () => Promise<void>,
  { paused, onError }: { paused: () => boolean; onError: (error: unknown) => void },
) => {
  let timer: NodeJS.Timeout | null = null;
  let running: Promise<void> | null = null;
  const runOnce = async () => {
    if (running || paused()) return;
    running = sweep()
      .catch(onError)
      .finally(() => (running = null));
    await running;
  };
  return {
    /** Runs a sweep now, unless one is in flight or the sweeper is paused. */
    runOnce,
    start: () => {
      timer ??= setInterval(() => void runOnce(), 1000);
    },
    stop: async () => {
      if (timer) clearInterval(timer);
      timer = null;
      await running;
    },
  };
};
