import type { EventStore } from '../eventstore/port.js';
import type { CollectionSpec, ReadModelStore } from './port.js';

/** Below this many events a catch-up from nothing keeps its indexes: building them later gains nothing. */
export const bulkCatchUpEvents = 10_000;

export interface CollectionIndexes {
  /** Ensures the collection; without its indexes when the runner starts from nothing on a long backlog. */
  ensure(checkpoint: number): Promise<void>;
  /**
   * After each batch: adds the indexes left out by `ensure` once the runner has caught up (a page short of
   * the batch size, or the head reached: a backlog of whole pages ends on a full one); a no-op otherwise.
   */
  afterBatch(events: number, batchSize: number, lastPosition: number): Promise<void>;
}

/**
 * Indexes for a projection runner's collection. Keeping six secondary indexes up to date took most of a
 * catch-up from position 0 (two thirds of the commit time in the profile); building each index once over
 * the finished table sorts instead, as a rebuild does. Until then a list reads the table without them:
 * slower, but the list is incomplete then anyway, and every answer is the same. A runner stopped before it
 * caught up resumes from its checkpoint, and so builds them when it starts again.
 */
export const collectionIndexes = (
  spec: CollectionSpec,
  deps: { readModels: ReadModelStore; eventStore: EventStore },
): CollectionIndexes => {
  let deferred = false;
  return {
    ensure: async (checkpoint) => {
      deferred = checkpoint === 0 && (await deps.eventStore.headPosition()) > bulkCatchUpEvents;
      await deps.readModels.ensureCollection(spec, undefined, deferred ? { indexes: false } : undefined);
    },
    afterBatch: async (events, batchSize, lastPosition) => {
      if (!deferred) return;
      if (events >= batchSize && lastPosition < (await deps.eventStore.headPosition())) return;
      deferred = false;
      await deps.readModels.ensureCollection(spec);
    },
  };
};
