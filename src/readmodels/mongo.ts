import { MongoBulkWriteError, MongoServerError, type Collection, type ReplaceOneModel } from 'mongodb';
import { acquireMongo, orUnavailable } from '../mongodb/client.js';
import { CollectionSwappedError } from './port.js';
import {
  collectionName,
  storedId,
  toGuardedReplace,
  toIndexes,
  toMongoFilter,
  toMongoSort,
  type StoredRow,
} from './mongo-query.js';
import type {
  CollectionSpec,
  ProjectionState,
  DocumentChange,
  DocumentKey,
  ListQuery,
  ParkedProjectionEvent,
  ReadModelStore,
  Scalar,
  StoredDocument,
} from './port.js';

export {
  collectionName,
  storedId,
  toAfterCondition,
  toGuardedReplace,
  toIndexes,
  toMongoCondition,
  toMongoFilter,
  toMongoSort,
  type StoredRow,
} from './mongo-query.js';

/**
 * Read models in MongoDB, one collection `rm_<name>` per read model. Without transactions (they need a
 * replica set) every write is guarded by the document's position instead, so redelivered events are no-ops
 * and two instances running the same projection cannot move a document or a checkpoint backwards.
 *
 * Blue/green without transactions: a rebuilt collection is renamed over the live one (renameCollection with
 * dropTarget, atomic on one server), so everything that addresses `rm_<name>` reads the new one at once. The
 * runners must not commit across that moment, or the new collection would miss their batch: the swap first
 * fences the live checkpoint (`swapping`), under which no commit completes, and bumps its `epoch` when done.
 * A commit reads the checkpoint before writing and moves it only if the epoch and fence are as it read them;
 * otherwise it throws CollectionSwappedError and the runner resubscribes from the stored checkpoint.
 */

interface CheckpointRow {
  _id: string;
  position: number;
  /** Bumped by every swap; a commit that started before one does not move the checkpoint. */
  epoch?: number | null;
  /** The physical collection being swapped in; no commit completes meanwhile. */
  swapping?: string | null;
  swappingSince?: Date | null;
  lastError?: string | null;
  lastErrorAt?: string | null;
}

/** A fence older than this is a swap that died half-way; runners ignore it. */
const STALE_FENCE_MS = 60_000;

const isFenced = (row: CheckpointRow | null): boolean =>
  !!row?.swapping && !!row.swappingSince && Date.now() - row.swappingSince.getTime() < STALE_FENCE_MS;

const DUPLICATE_KEY = 11000;

const isDuplicateKey = (error: unknown): boolean =>
  error instanceof MongoServerError && error.code === DUPLICATE_KEY;

/** A bulk failure made only of duplicate keys, with no write concern error behind them. */
const isDuplicateKeysOnly = (error: unknown): error is MongoBulkWriteError =>
  error instanceof MongoBulkWriteError &&
  error.err === undefined &&
  error.result.getWriteConcernError() === undefined &&
  [error.writeErrors].flat().length > 0 &&
  [error.writeErrors].flat().every((writeError) => writeError.code === DUPLICATE_KEY);

const replaceGuarded = async (rows: Collection<StoredRow>, model: ReplaceOneModel<StoredRow>) => {
  try {
    await rows.replaceOne(model.filter, model.replacement, { upsert: true });
  } catch (error) {
    // The document exists by now (tombstones are never removed), so this duplicate key is conclusive.
    if (!isDuplicateKey(error)) throw error;
  }
};

const writeGuarded = async (rows: Collection<StoredRow>, models: ReplaceOneModel<StoredRow>[]) => {
  try {
    await rows.bulkWrite(
      models.map((replaceOne) => ({ replaceOne })),
      { ordered: false },
    );
  } catch (error) {
    if (!isDuplicateKeysOnly(error)) throw error;
    // Usually a duplicate key is a redelivery: the stored document is at or past the change. But it can also
    // be another instance inserting the same new document first, at a lower position, so retry those writes
    // once. And the driver stops after the first batch with errors, unordered or not: if some writes never
    // ran, replay them all (the guard makes that harmless).
    const failed = [error.writeErrors].flat();
    const settled = error.result.matchedCount + error.result.upsertedCount + failed.length;
    const retry =
      settled < models.length ? models : failed.flatMap((writeError) => models[writeError.index] ?? []);
    for (const model of retry) await replaceGuarded(rows, model);
  }
};

/** Only the last change of each document can win; sending the earlier ones would just fail their guards. */
const latestByCollection = (changes: readonly DocumentChange[]): Map<string, DocumentChange[]> => {
  const latest = new Map<string, Map<string, DocumentChange>>();
  for (const change of changes) {
    const documents = latest.get(change.collection) ?? new Map<string, DocumentChange>();
    latest.set(change.collection, documents);
    const seen = documents.get(storedId(change));
    if (!seen || seen.position < change.position) documents.set(storedId(change), change);
  }
  return new Map([...latest].map(([collection, documents]) => [collection, [...documents.values()]]));
};

export const openMongoReadModels = async (url: string): Promise<ReadModelStore> => {
  const mongo = await acquireMongo(url);
  const { db } = mongo;
  const rows = (collection: string) => db.collection<StoredRow>(collectionName(collection));
  const checkpoints = db.collection<CheckpointRow>('checkpoints');
  const specs = new Map<string, CollectionSpec>();
  const parked = db.collection<ParkedProjectionEvent & { _id: string }>('parked_events');
  // Sorted reads by projection and position; _id (`<projection>:<position>`) makes parking idempotent.
  await parked.createIndex({ projection: 1, position: 1 }, { name: 'parked_events_projection_position' });

  const find = async (collection: string, query: ListQuery): Promise<StoredRow[]> => {
    const spec = specs.get(collection);
    if (!spec) throw new Error(`The read model ${collection} was not ensured before being listed`);
    // MongoDB reads a limit of 0 as "no limit".
    if (query.limit <= 0) return [];
    const cursor = rows(collection).find(toMongoFilter(spec, query), {
      sort: toMongoSort(spec, query),
      limit: query.limit,
      projection: { _id: 0, id: 1, doc: 1 },
    });
    return await orUnavailable(cursor.toArray());
  };

  return {
    kind: 'mongodb',

    ensureCollection: async (spec, physicalName, options) => {
      // Creating an index that exists with the same name and keys is a no-op, so this is idempotent. The index
      // names come from the logical name, so a physical collection renamed over the live one has the same.
      if (options?.indexes === false)
        await db.createCollection(collectionName(physicalName ?? spec.name)).catch((error: unknown) => {
          // NamespaceExists: a resumed build.
          if (!(error instanceof MongoServerError && error.code === 48)) throw error;
        });
      else await rows(physicalName ?? spec.name).createIndexes(toIndexes(spec));
      specs.set(physicalName ?? spec.name, spec);
    },

    get: async <D>(collection: string, key: DocumentKey): Promise<StoredDocument<D> | null> => {
      const row = await orUnavailable(rows(collection).findOne({ _id: storedId(key) }));
      return row && !row.deleted ? { doc: row.doc as D, position: row.position } : null;
    },

    getMany: async <D>(collection: string, keys: readonly DocumentKey[]) => {
      // One round trip per thousand documents rather than one per document.
      const found = new Map<string, StoredRow>();
      for (let start = 0; start < keys.length; start += 1000) {
        const ids = keys.slice(start, start + 1000).map(storedId);
        for (const row of await orUnavailable(
          rows(collection)
            .find({ _id: { $in: ids } })
            .toArray(),
        )) {
          found.set(row._id, row);
        }
      }
      return keys.map((key): StoredDocument<D> | null => {
        const row = found.get(storedId(key));
        return row && !row.deleted ? { doc: row.doc as D, position: row.position } : null;
      });
    },

    list: async <D>(collection: string, query: ListQuery): Promise<D[]> =>
      (await find(collection, query)).map((row) => row.doc as D),

    listJson: async (collection, query) => {
      const path = specs.get(collection)?.fields[query.sort.field]?.path ?? query.sort.field;
      return (await find(collection, query)).map((row) => ({
        json: JSON.stringify(row.doc),
        id: row.id,
        sortValue: (path
          .split('.')
          .reduce<unknown>(
            (value, key) => (value as Record<string, unknown> | null)?.[key] ?? null,
            row.doc,
          ) ?? null) as Scalar | null,
      }));
    },

    commit: async (projection, changes, checkpoint) => {
      const state = await checkpoints.findOne({ _id: projection });
      if (isFenced(state)) throw new CollectionSwappedError(projection);
      for (const [collection, latest] of latestByCollection(changes)) {
        await writeGuarded(rows(collection), latest.map(toGuardedReplace));
      }
      // Only after the documents: a crash in between redelivers the batch, which the guards absorb.
      // $max so that an instance running behind never moves the checkpoint backwards; and only if no swap
      // began since the read above (when the guard misses, the upsert collides with the existing _id).
      try {
        await checkpoints.updateOne(
          { _id: projection, epoch: state?.epoch ?? null, swapping: state?.swapping ?? null },
          { $max: { position: checkpoint } },
          { upsert: true },
        );
      } catch (error) {
        if (isDuplicateKey(error)) throw new CollectionSwappedError(projection);
        throw error;
      }
    },

    getCheckpoint: async (projection) => (await checkpoints.findOne({ _id: projection }))?.position ?? 0,

    getProjectionState: async (projection): Promise<ProjectionState> => {
      const row = await checkpoints.findOne({ _id: projection });
      return {
        checkpoint: row?.position ?? 0,
        lastError: row?.lastError ? { message: row.lastError, at: row.lastErrorAt ?? '' } : null,
      };
    },

    recordError: async (projection, message) => {
      await checkpoints.updateOne(
        { _id: projection },
        { $set: { lastError: message, lastErrorAt: message === null ? null : new Date().toISOString() } },
        { upsert: true },
      );
    },

    swap: async (request) => {
      const { projection, sourceProjection } = request;
      await checkpoints.updateOne(
        { _id: projection },
        { $set: { swapping: request.source, swappingSince: new Date() } },
        { upsert: true },
      );
      const unfence = async (update: Partial<CheckpointRow>) =>
        checkpoints.updateOne(
          { _id: projection },
          {
            // MongoDB refuses an empty $set.
            ...(Object.keys(update).length > 0 && { $set: update }),
            $unset: { swapping: '', swappingSince: '' },
          },
        );
      try {
        // Fenced: the live checkpoint cannot move any more.
        const live = await checkpoints.findOne({ _id: projection });
        const sourceCheckpoint = (await checkpoints.findOne({ _id: sourceProjection }))?.position ?? 0;
        if ((live?.position ?? 0) > sourceCheckpoint) {
          await unfence({});
          return false;
        }
        const epoch = (live?.epoch ?? 0) + 1;
        if (request.tenantId !== undefined) {
          // Not atomic here: the tenant's documents are missing from the lists for the time of the copy.
          const target = rows(request.collection);
          await target.deleteMany({ tenantId: request.tenantId });
          let batch: ReplaceOneModel<StoredRow>[] = [];
          const flush = async () => {
            if (batch.length > 0) await target.bulkWrite(batch.map((replaceOne) => ({ replaceOne })));
            batch = [];
          };
          for await (const { _id, ...row } of rows(request.source).find({ tenantId: request.tenantId })) {
            batch.push({ filter: { _id }, replacement: row, upsert: true });
            if (batch.length === 1000) await flush();
          }
          await flush();
          await rows(request.source).drop();
          await unfence({ epoch });
        } else {
          await db.renameCollection(collectionName(request.source), collectionName(request.collection), {
            dropTarget: true,
          });
          await unfence({ epoch, position: sourceCheckpoint });
        }
        await checkpoints.deleteOne({ _id: sourceProjection });
        specs.delete(request.source);
        return true;
      } catch (error) {
        await unfence({}).catch(() => undefined);
        throw error;
      }
    },

    dropCollection: async (physicalName) => {
      if (specs.get(physicalName)?.name === physicalName) {
        throw new Error(`${physicalName} is a live collection; it cannot be dropped`);
      }
      try {
        await rows(physicalName).drop();
      } catch (error) {
        // NamespaceNotFound: servers before 7.0 refuse to drop what does not exist.
        if (!(error instanceof MongoServerError && error.code === 26)) throw error;
      }
      specs.delete(physicalName);
    },

    parkEvent: async (event) => {
      const { error, parkedAt, ...identity } = event;
      await parked.updateOne(
        { _id: `${event.projection}:${event.position}` },
        { $set: { error, parkedAt }, $setOnInsert: identity },
        { upsert: true },
      );
    },

    listParked: async (projection) =>
      (
        await parked
          .find(projection === undefined ? {} : { projection }, {
            sort: { projection: 1, position: 1 },
            projection: { _id: 0 },
          })
          .toArray()
      ).map(({ projection: name, position, tenantId, eventId, eventType, error, parkedAt }) => ({
        projection: name,
        position,
        tenantId,
        eventId,
        eventType,
        error,
        parkedAt,
      })),

    unpark: async (projection, position) =>
      (await parked.deleteOne({ _id: `${projection}:${position}` })).deletedCount > 0,

    reset: async (projection, collection) => {
      // The checkpoint first: a crash in between leaves stale documents for the next reset to remove, never a
      // checkpoint past documents that are gone.
      await checkpoints.deleteOne({ _id: projection });
      // deleteMany rather than drop: the indexes stay, and the collection need not be ensured again.
      await rows(collection).deleteMany({});
    },

    ping: async () => {
      await orUnavailable(db.command({ ping: 1 }));
    },

    close: () => mongo.release(),
  };
};
