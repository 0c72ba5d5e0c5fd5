import type { Subscription } from './port.js';
import { latchedSubscription, stopLatch, type StopLatch } from './append-signal.js';

/**
 * The consumers of each group running in this process, by their latches: a replay of parked events pokes
 * them out of their sleep, since the append signal knows nothing of it.
 */
export const consumerLatches = () => {
  const byGroup = new Map<string, Set<StopLatch>>();
  return {
    /** A consumer of `group` that runs `consume` until stopped, known to `poke` meanwhile. */
    join: (group: string, consume: (latch: StopLatch) => Promise<void>): Subscription => {
      const latch = stopLatch();
      const mine = byGroup.get(group) ?? new Set();
      byGroup.set(group, mine.add(latch));
      const leave = () => {
        mine.delete(latch);
        if (mine.size === 0 && byGroup.get(group) === mine) byGroup.delete(group);
      };
      return latchedSubscription(() => consume(latch).finally(leave), latch);
    },
    poke: (group: string) => {
      for (const latch of byGroup.get(group) ?? []) latch.poke();
    },
  };
};
