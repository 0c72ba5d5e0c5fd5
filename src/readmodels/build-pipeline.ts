import type { RecordedEvent } from '../core/events.js';
import { asError } from '../core/errors.js';
import { isStoreFailure } from '../core/store-failures.js';
import type { DocumentChange, DocumentKey, ReadModelStore, StoredDocument } from './port.js';
import type { Projection } from './projection.js';
import { applyBatch, commitBatch, type OnPoison } from './runner.js';

/**
 * A build's batches, each read and folded while the batch before it is committed. On PostgreSQL the
 * process was idle two thirds of a rebuild, waiting for each commit, and the server waited while the
 * process folded the next batch (docs/benchmarks.md, the rebuild): now the two work side by side.
 *
 * The batch in flight is not in the table yet, so the next one is folded over its documents as they will
 * be once committed (`overlaid`): a document both batches touch is never read stale. A batch that fails to
 * commit goes the runner's way (commitBatch: one event per commit, parking the one to blame); the next
 * batch, folded over documents that were then not committed as folded, is folded again from the table.
 * Commits stay in order, one at a time, each with its checkpoint, so an interrupted build resumes as before.
 */
export interface BatchWriter {
  /** Folds the batch, waits for the one in flight, and sends this one, up to `lastPosition`. */
  write(events: readonly RecordedEvent[], lastPosition: number): Promise<void>;
  /** Waits until the batch in flight is committed (or parked). */
  flush(): Promise<void>;
}

const keyOf = (key: DocumentKey): string => `${key.tenantId}\u0000${key.id}`;

/** The store's documents, with those of the batch in flight as its commit will leave them. */
const overlaid = (
  readModels: ReadModelStore,
  pending: ReadonlyMap<string, DocumentChange> | undefined,
): Pick<ReadModelStore, 'getMany'> => {
  if (!pending || pending.size === 0) return readModels;
  const getMany = async <D>(collection: string, keys: readonly DocumentKey[]) => {
    const unknown = keys.filter((key) => !pending.has(keyOf(key)));
    const stored = new Map(
      (await readModels.getMany<D>(collection, unknown)).map((found, n) => [keyOf(unknown[n]!), found]),
    );
    return keys.map((key): StoredDocument<D> | null => {
      const change = pending.get(keyOf(key));
      if (!change) return stored.get(keyOf(key)) ?? null;
      return change.doc === null ? null : { doc: change.doc as D, position: change.position };
    });
  };
  return { getMany };
};

export const pipelinedBatches = <D>(
  projection: Projection<D>,
  readModels: ReadModelStore,
  onPoison: OnPoison,
): BatchWriter => {
  let inFlight: {
    events: readonly RecordedEvent[];
    lastPosition: number;
    changes: Map<string, DocumentChange>;
    committed: Promise<Error | null>;
  } | null = null;

  /** Waits for the batch in flight; answers whether it was committed as it was folded. */
  const settle = async (): Promise<boolean> => {
    const batch = inFlight;
    inFlight = null;
    if (!batch) return true;
    const failure = await batch.committed;
    if (failure === null) return true;
    if (isStoreFailure(failure)) throw failure;
    await commitBatch(projection, readModels, batch.events, batch.lastPosition, onPoison);
    return false;
  };

  const fold = (events: readonly RecordedEvent[]): Promise<DocumentChange[] | null> =>
    applyBatch(projection, overlaid(readModels, inFlight?.changes), events).catch(() => null);

  return {
    write: async (events, lastPosition) => {
      const changes = await fold(events);
      const asFolded = await settle();
      if (changes === null || !asFolded) {
        // The fold failed (a store failure or an event to park), or was folded over documents that were
        // not committed as folded: the runner's way, from the table.
        await commitBatch(projection, readModels, events, lastPosition, onPoison);
        return;
      }
      inFlight = {
        events,
        lastPosition,
        changes: new Map(changes.map((change) => [keyOf(change), change])),
        // The failure is kept for `settle`, so that it is never an unhandled rejection meanwhile.
        committed: readModels.commit(projection.name, changes, lastPosition).then(() => null, asError),
      };
    },
    flush: async () => {
      await settle();
    },
  };
};
