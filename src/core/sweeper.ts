import { schedule as cronSchedule, type ScheduledTask } from 'node-cron';

/**
 * A sweep that node-cron runs every second: never two at once, none started while `paused()` says so (a
 * stop has begun), a failure reported and the next second tried again. `stop` waits for the sweep in
 * flight, which node-cron's destroy() does not.
 */
export const everySecond = (
  sweep: () => Promise<void>,
  { paused, onError }: { paused: () => boolean; onError: (error: unknown) => void },
) => {
  let task: ScheduledTask | null = null;
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
      task = cronSchedule('* * * * * *', runOnce);
    },
    stop: async () => {
      await task?.destroy();
      task = null;
      await running;
    },
  };
};
