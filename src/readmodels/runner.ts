import { EventEmitter } from 'node:events';
import type { Logger } from 'pino';
import type { RecordedEvent } from '../core/events.js';
import type { EventStore, Subscription } from '../eventstore/port.js';
import {
  notRunning,
  supervise,
  type BackOff,
  type ConsumerStatus,
  type Running,
  type Supervised,
} from '../core/supervisor.js';
import { errorText, failureVerdict, parkAndRecord, parkedRecord, storeAnswers } from './parking.js';
import { isStoreFailure } from '../core/store-failures.js';
import { inEventSpans } from '../core/spans.js';
import { CollectionSwappedError, type DocumentChange, type ReadModelStore } from './port.js';
import type { Projection } from './projection.js';
import { collectionIndexes } from './deferred-indexes.js';

interface Working<D> {
  tenantId: string;
  id: string;
  doc: D | null;
  position: number;
  changed: boolean;
  /** Its first event in the batch begins the document (Projection.creates): nothing to read first. */
  fresh: boolean;
}

/**
 * Folds one batch into document changes. The batch's documents are loaded together, once per batch; an
 * event at or below a document's stored position was applied before (a redelivery after a crash) and is
 * skipped.
 */
export const applyBatch = async <D>(
  projection: Projection<D>,
  readModels: Pick<ReadModelStore, 'getMany'>,
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
      const { creates } = projection;
      const fresh = creates === 'all' || (creates?.includes(event.type) ?? false);
      entry = { tenantId: key.tenantId, id: key.id, doc: null, position: 0, changed: false, fresh };
      working.set(mapKey, entry);
    }
    touched.push({ event, entry });
  }
  const entries = [...working.values()].filter((entry) => !entry.fresh);
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

/** What to do with an event that cannot be applied alone while the store answers. */
export type OnPoison = (event: RecordedEvent, error: unknown) => Promise<void>;

/**
 * Applies a batch and moves the checkpoint to `lastPosition` in one commit. When that fails, the batch is
 * applied again one event at a time, each in its own commit, to find the event to blame: an event that
 * fails alone while the store still answers is handed to `onPoison` (which parks it) and the checkpoint
 * moves past it; any other failure is the store's and is thrown, leaving the checkpoint before the event.
 * Answers how many events were handed to `onPoison`.
 */
export const commitBatch = async <D>(
  projection: Projection<D>,
  readModels: ReadModelStore,
  events: readonly RecordedEvent[],
  lastPosition: number,
  onPoison: OnPoison,
): Promise<number> => {
  try {
    await readModels.commit(projection.name, await applyBatch(projection, readModels, events), lastPosition);
    return 0;
  } catch (error) {
    // A swap is for the runner to follow; a store that fails fails every event alike.
    if (isStoreFailure(error)) throw error;
  }
  let poisoned = 0;
  let checkpoint = events[0] ? events[0].position - 1 : lastPosition;
  for (const event of events) {
    try {
      await readModels.commit(
        projection.name,
        await applyBatch(projection, readModels, [event]),
        event.position,
      );
    } catch (error) {
      const verdict = failureVerdict(error, await storeAnswers(readModels, projection.name, checkpoint));
      if (verdict === 'transient') throw error;
      await onPoison(event, error);
      await readModels.commit(projection.name, [], event.position);
      poisoned += 1;
    }
    checkpoint = event.position;
  }
  await readModels.commit(projection.name, [], lastPosition);
  return poisoned;
};

export interface ProjectionRunnerStatus extends ConsumerStatus {
  /** The last position applied (or parked) by this runner. */
  checkpoint: number;
  /** Events of this projection parked now, in any process. */
  parked: number;
}

export interface ProjectionRunner {
  readonly name: string;
  start(): Promise<void>;
  stop(): Promise<void>;
  /** Resolves true once the read model has applied everything up to `position`, false after `timeoutMs`. */
  waitFor(position: number, timeoutMs: number): Promise<boolean>;
  /**
   * The supervisor's state with the runner's own `lastError`: the last failure, cleared (with the stored
   * one) by the next successful batch.
   */
  status(): ProjectionRunnerStatus;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** How often `status()` refreshes the parked count, which the CLI changes from another process. */
const parkedRefreshMs = 1000;
/**
 * How often `waitFor` reads the stored checkpoint while no runner in this process reports progress (ROLE=api,
 * or another instance's runner): one indexed read, against a read-your-writes wait that was ~100 ms at the
 * median when this was 100 ms (bench `scaleout`).
 */
const storedCheckpointPollMs = 10;

/**
 * Runs a projection as a catch-up subscription from its stored checkpoint, under a supervisor. Each batch's
 * documents and the checkpoint are committed together; an event that cannot be applied is parked (see
 * commitBatch) and recorded as `ProjectionEventParked`. A store failure is logged, kept in the store as the
 * projection's last error (for `projections status`; the next successful batch clears it), and the
 * supervisor starts the subscription again from the checkpoint with back-off. The runner addresses the
 * logical collection, so after a rebuild is swapped in it writes the new one; a commit that raced the swap
 * resumes at once from the swapped-in checkpoint, which is not a failure.
 */
export const projectionRunner = <D>(
  projection: Projection<D>,
  deps: {
    eventStore: EventStore;
    readModels: ReadModelStore;
    logger: Logger;
    batchSize?: number;
    backOff?: BackOff;
  },
): ProjectionRunner => {
  const { eventStore, readModels, logger } = deps;
  const progress = new EventEmitter();
  progress.setMaxListeners(0);
  let checkpoint = 0;
  let lastError: { message: string; at: string } | null = null;
  let parked = 0;
  let parkedReadAt = 0;
  let supervised: Supervised | null = null;
  const indexes = collectionIndexes(projection.collection, deps);

  const refreshParked = async () => {
    parkedReadAt = Date.now();
    parked = (await readModels.listParked(projection.name)).length;
  };

  const park: OnPoison = async (event, error) => {
    logger.warn(
      {
        projection: projection.name,
        eventId: event.id,
        position: event.position,
        error: errorText(error),
        tenantId: event.metadata.tenantId,
        err: error,
      },
      'projection cannot apply this event; parked it and going on',
    );
    await parkAndRecord(deps, parkedRecord(projection.name, event, error, new Date()), 'system:projections');
    await refreshParked();
  };

  const subscribe = async (): Promise<Subscription> => {
    const state = await readModels.getProjectionState(projection.name);
    checkpoint = state.checkpoint;
    lastError ??= state.lastError;
    return eventStore.subscribe(
      {
        after: checkpoint,
        filter: projection.eventTypes === 'all' ? {} : { eventTypes: projection.eventTypes },
        batchSize: deps.batchSize ?? 500,
      },
      async (events, lastPosition) => {
        // With traces on, each traced event of the batch gets its span `project <name>` in its own trace.
        await inEventSpans(`project ${projection.name}`, events, { 'projection.name': projection.name }, () =>
          commitBatch(projection, readModels, events, lastPosition, park),
        );
        await indexes.afterBatch(events.length, deps.batchSize ?? 500, lastPosition);
        checkpoint = lastPosition;
        if (lastError !== null) {
          lastError = null;
          await readModels.recordError(projection.name, null);
        }
        progress.emit('progress', checkpoint);
      },
    );
  };

  /** Keeps the failure for `status()` and `projections status`, then lets the supervisor have it. */
  const failed = async (error: unknown): Promise<never> => {
    lastError = { message: errorText(error), at: new Date().toISOString() };
    await readModels.recordError(projection.name, lastError.message).catch(() => undefined);
    throw error;
  };

  /** One run for the supervisor: follows swaps itself, and fails (after keeping the error) otherwise. */
  const run = async (): Promise<Running> => {
    let stopping = false;
    let subscription = await subscribe().catch(failed);
    const done = (async () => {
      for (;;) {
        try {
          return await subscription.done;
        } catch (error) {
          if (stopping) return;
          if (!(error instanceof CollectionSwappedError)) return failed(error);
          logger.info(
            { projection: projection.name },
            'read model swapped; resuming from its new checkpoint',
          );
          await sleep(100);
          if (stopping) return;
          subscription = await subscribe().catch(failed);
          if (stopping) await subscription.stop();
        }
      }
    })();
    return {
      done,
      stop: async () => {
        stopping = true;
        await subscription.stop();
        await done.catch(() => undefined);
      },
    };
  };

  /**
   * Whether the read model already reflects `position`: no event of the projection's kinds lies between
   * its checkpoint and there (the write waited for was of another kind), as a read that got that far shows.
   * Positions it skips are reported only now and then (skipReportMs), so the checkpoint alone would lag.
   */
  const nothingToApplyUpTo = async (position: number): Promise<boolean> => {
    if (projection.eventTypes === 'all') return false;
    const page = await eventStore.readAll({
      after: checkpoint,
      maxCount: 1,
      filter: { eventTypes: projection.eventTypes },
      raw: true,
    });
    const next = page.events[0]?.position ?? Number.POSITIVE_INFINITY;
    return next > position && (page.events.length > 0 || page.lastPosition >= position);
  };

  return {
    name: projection.name,
    start: async () => {
      const state = await readModels.getProjectionState(projection.name);
      checkpoint = state.checkpoint;
      await indexes.ensure(checkpoint);
      await refreshParked();
      supervised = supervise(projection.name, run, {
        logger,
        ...(deps.backOff ? { backOff: deps.backOff } : {}),
      });
    },
    stop: async () => {
      await supervised?.stop();
    },
    waitFor: async (position, timeoutMs) => {
      const deadline = Date.now() + timeoutMs;
      // The stored checkpoint is asked too: with several instances (or ROLE=api, which runs no runner),
      // another one may have applied the event. What the read model reflects is then at least that.
      const stored = async () => {
        checkpoint = Math.max(checkpoint, await readModels.getCheckpoint(projection.name));
        return checkpoint;
      };
      if (checkpoint >= position || (await stored()) >= position) return true;
      if (await nothingToApplyUpTo(position)) return true;
      while (checkpoint < position && (await stored()) < position) {
        const left = deadline - Date.now();
        if (left <= 0) return false;
        await new Promise<void>((resolve) => {
          const done = () => {
            clearTimeout(timer);
            progress.off('progress', done);
            resolve();
          };
          const timer = setTimeout(done, Math.min(left, storedCheckpointPollMs));
          progress.on('progress', done);
        });
      }
      return true;
    },
    status: () => {
      if (supervised && Date.now() - parkedReadAt > parkedRefreshMs) {
        refreshParked().catch(() => undefined);
      }
      const consumer = supervised?.status() ?? notRunning(projection.name);
      return {
        ...consumer,
        lastError: lastError?.message ?? null,
        lastErrorAt: lastError?.at ?? null,
        checkpoint,
        parked,
      };
    },
  };
};
