import { EventEmitter } from 'node:events';
import type { Logger } from 'pino';
import type { RecordedEvent } from '../core/events.js';
import type { EventStore, Subscription } from '../eventstore/port.js';
import { CollectionSwappedError, type DocumentChange, type ReadModelStore } from './port.js';
import type { Projection } from './projection.js';

interface Working<D> {
  tenantId: string;
  id: string;
  doc: D | null;
  position: number;
  changed: boolean;
}

/**
 * Folds one batch into document changes. The batch's documents are loaded together, once per batch; an
 * event at or below a document's stored position was applied before (a redelivery after a crash) and is
 * skipped.
 */
export const applyBatch = async <D>(
  projection: Projection<D>,
  readModels: ReadModelStore,
  events: readonly RecordedEvent[],
): Promise<DocumentChange[]> => {
  const working = new Map<string, Working<D>>();
  const touched: { event: RecordedEvent; entry: Working<D> }[] = [];
  for (const event of events) {
    const key = projection.documentKey(event);
    if (!key) continue;
    const mapKey = `${key.tenantId}\u0000${key.id}`;
    let entry = working.get(mapKey);
    if (!entry) {
      entry = { tenantId: key.tenantId, id: key.id, doc: null, position: 0, changed: false };
      working.set(mapKey, entry);
    }
    touched.push({ event, entry });
  }
  const entries = [...working.values()];
  const stored = await readModels.getMany<D>(projection.collection.name, entries);
  entries.forEach((entry, index) => {
    entry.doc = stored[index]?.doc ?? null;
    entry.position = stored[index]?.position ?? 0;
  });
  for (const { event, entry } of touched) {
    if (event.position <= entry.position) continue;
    entry.doc = projection.evolve(entry.doc, event);
    entry.position = event.position;
    entry.changed = true;
  }
  return [...working.values()]
    .filter((entry) => entry.changed)
    .map(({ tenantId, id, doc, position }) => ({
      collection: projection.collection.name,
      tenantId,
      id,
      doc,
      position,
    }));
};

export interface ProjectionRunner {
  readonly name: string;
  start(): Promise<void>;
  stop(): Promise<void>;
  /** Resolves true once the read model has applied everything up to `position`, false after `timeoutMs`. */
  waitFor(position: number, timeoutMs: number): Promise<boolean>;
  status(): { checkpoint: number; lastError: string | null };
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * Runs a projection as a catch-up subscription from its stored checkpoint. Each batch's documents and the
 * checkpoint are committed together. A failing batch is logged, kept in the store as the projection's last
 * error (for `projections status`; the next successful batch clears it) and retried from the checkpoint.
 * The runner addresses the logical collection, so after a rebuild is swapped in it writes the new one; a
 * commit that raced the swap is retried from the swapped-in checkpoint.
 */
export const projectionRunner = <D>(
  projection: Projection<D>,
  deps: { eventStore: EventStore; readModels: ReadModelStore; logger: Logger; batchSize?: number },
): ProjectionRunner => {
  const { eventStore, readModels, logger } = deps;
  const progress = new EventEmitter();
  progress.setMaxListeners(0);
  let checkpoint = 0;
  let lastError: string | null = null;
  let subscription: Subscription | null = null;
  let running = false;

  const subscribe = async (): Promise<void> => {
    const state = await readModels.getProjectionState(projection.name);
    checkpoint = state.checkpoint;
    lastError ??= state.lastError?.message ?? null;
    subscription = eventStore.subscribe(
      {
        after: checkpoint,
        filter: projection.eventTypes === 'all' ? {} : { eventTypes: projection.eventTypes },
        batchSize: deps.batchSize ?? 500,
      },
      async (events, lastPosition) => {
        await readModels.commit(
          projection.name,
          await applyBatch(projection, readModels, events),
          lastPosition,
        );
        checkpoint = lastPosition;
        if (lastError !== null) {
          lastError = null;
          await readModels.recordError(projection.name, null);
        }
        progress.emit('progress', checkpoint);
      },
    );
    subscription.done.catch(async (error: unknown) => {
      if (error instanceof CollectionSwappedError) {
        logger.info({ projection: projection.name }, 'read model swapped; resuming from its new checkpoint');
        await sleep(100);
      } else {
        lastError = (error as Error).message;
        logger.error(
          { err: error, projection: projection.name },
          'projection failed; retrying from its checkpoint',
        );
        await readModels.recordError(projection.name, lastError).catch(() => undefined);
        await sleep(1000);
      }
      // Until the store answers again.
      while (running) {
        try {
          await subscribe();
          return;
        } catch (retryError) {
          logger.error({ err: retryError, projection: projection.name }, 'projection cannot resubscribe');
          await sleep(1000);
        }
      }
    });
  };

  return {
    name: projection.name,
    start: async () => {
      running = true;
      await readModels.ensureCollection(projection.collection);
      await subscribe();
    },
    stop: async () => {
      running = false;
      await subscription?.stop();
    },
    waitFor: async (position, timeoutMs) => {
      const deadline = Date.now() + timeoutMs;
      // The stored checkpoint is asked too: with several instances, another one may have applied the event.
      while (checkpoint < position && (await readModels.getCheckpoint(projection.name)) < position) {
        const left = deadline - Date.now();
        if (left <= 0) return false;
        await new Promise<void>((resolve) => {
          const done = () => {
            clearTimeout(timer);
            progress.off('progress', done);
            resolve();
          };
          const timer = setTimeout(done, Math.min(left, 100));
          progress.on('progress', done);
        });
      }
      return true;
    },
    status: () => ({ checkpoint, lastError }),
  };
};
