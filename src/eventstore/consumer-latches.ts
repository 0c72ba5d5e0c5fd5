import type { EventStore, PersistentHandler } from './port.js';
import { latchedSubscription, stopLatch, type StopLatch } from './append-signal.js';

/** One consumer of a group, run until its latch is stopped, with up to `concurrency` events in hand. */
export type GroupConsumer = (
  group: string,
  handler: PersistentHandler,
  latch: StopLatch,
  concurrency: number,
) => Promise<void>;

/**
 * The consumers of each group running in this process, by their latches: a replay of parked events pokes
 * them out of their sleep, since the append signal knows nothing of it.
 */
export const consumerLatches = (consume: GroupConsumer) => {
  const byGroup = new Map<string, Set<StopLatch>>();
  const subscribePersistent: EventStore['subscribePersistent'] = (
    group,
    handler,
    { concurrency = 1 } = {},
  ) => {
    const latch = stopLatch();
    const mine = byGroup.get(group) ?? new Set();
    byGroup.set(group, mine.add(latch));
    const leave = () => {
      mine.delete(latch);
      if (mine.size === 0 && byGroup.get(group) === mine) byGroup.delete(group);
    };
    return latchedSubscription(
      () => consume(group, handler, latch, Math.max(1, concurrency)).finally(leave),
      latch,
    );
  };
  const poke = (group: string) => {
    for (const latch of byGroup.get(group) ?? []) latch.poke();
  };
  return { subscribePersistent, poke };
};
