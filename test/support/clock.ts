import type { Clock } from '../../src/core/ids.js';

export interface TestClock extends Clock {
  /** Moves the clock forward: what the service reads as now jumps by `ms`, at once. */
  advance: (ms: number) => void;
}

/**
 * A clock the test moves forward by hand, for a service started with `options: { clock }`: a token or a
 * kept answer expires the moment the test says so, instead of after a real wait.
 *
 * It runs on with real time plus the offset the test added, rather than standing still: ids carry the
 * clock's milliseconds (src/core/ids.ts), and lists that a test reads in creation order would come back
 * shuffled if every id had the same time. Only what reads this clock moves; timers (sweeps, retries, TTL
 * settings given in real durations) still run on real time.
 */
export const testClock = (): TestClock => {
  let offsetMs = 0;
  const clock = () => new Date(Date.now() + offsetMs);
  return Object.assign(clock, {
    advance: (ms: number) => {
      if (ms < 0) throw new Error('a test clock only moves forward');
      offsetMs += ms;
    },
  });
};
