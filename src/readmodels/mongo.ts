import {
  MongoBulkWriteError,
  MongoServerError,
  type Collection,
  type Filter,
  type IndexDescription,
  type ReplaceOneModel,
} from 'mongodb';
import { acquireMongo, orUnavailable } from '../mongodb/client.js';
import { CollectionSwappedError } from './port.js';
import type {
  CollectionSpec,
  ProjectionState,
  DocumentChange,
  DocumentKey,
  Filter as ReadModelFilter,
  ListQuery,
  ParkedProjectionEvent,
  ReadModelStore,
  Scalar,
  SortDirection,
  StoredDocument,
} from './port.js';

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

/** The projection's document untouched under `doc`; queries address its fields as `doc.<path>`. */
export interface StoredRow {
  _id: string;
  tenantId: string;
  id: string;
  position: number;
  doc: unknown;
  /** A tombstone: deleted at `position`, kept so that an older redelivered event cannot recreate it. */
  deleted?: true;
}

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

export const collectionName = (name: string): string => `rm_${name}`;

export const storedId = (key: DocumentKey): string => `${key.tenantId}:${key.id}`;

/** The database named by the URL's path, else `observations` (the driver alone would pick `test`). */

const fieldPath = (spec: CollectionSpec, field: string): string => {
  const fieldSpec = spec.fields[field];
  if (!fieldSpec) throw new Error(`The read model ${spec.name} has no field ${field}`);
  return `doc.${fieldSpec.path}`;
};

/** Every index starts with the tenant (all queries have it) and ends with the id (the keyset tie-breaker). */
export const toIndexes = (spec: CollectionSpec): IndexDescription[] => [
  { key: { tenantId: 1, id: 1 }, name: `${spec.name}_tenantId_id`, unique: true },
  ...spec.indexes
    .filter((fields) => fields.length > 0)
    .map((fields) => ({
      key: { tenantId: 1, ...Object.fromEntries(fields.map((field) => [fieldPath(spec, field), 1])), id: 1 },
      name: `${spec.name}_${fields.join('_')}`,
    })),
];

const escapeRegex = (text: string): string => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

export const toMongoCondition = (spec: CollectionSpec, filter: ReadModelFilter): Filter<StoredRow> => {
  switch (filter.op) {
    case 'eq':
      return { [fieldPath(spec, filter.field)]: filter.value };
    case 'in':
      return { [fieldPath(spec, filter.field)]: { $in: [...filter.values] } };
    case 'gt':
    case 'gte':
    case 'lt':
    case 'lte':
      return { [fieldPath(spec, filter.field)]: { [`$${filter.op}`]: filter.value } };
    case 'prefix':
      // Anchored and case-sensitive, so the index on the field bounds the scan.
      return { [fieldPath(spec, filter.field)]: { $regex: `^${escapeRegex(filter.value)}` } };
    case 'bbox': {
      const { box } = filter;
      const lat = fieldPath(spec, filter.latField);
      const lon = fieldPath(spec, filter.lonField);
      const latitude = { [lat]: { $gte: box.minLat, $lte: box.maxLat } };
      if (box.minLon <= box.maxLon) return { ...latitude, [lon]: { $gte: box.minLon, $lte: box.maxLon } };
      // Across the antimeridian the box is two: east of minLon or west of maxLon.
      return { ...latitude, $or: [{ [lon]: { $gte: box.minLon } }, { [lon]: { $lte: box.maxLon } }] };
    }
  }
};

/**
 * Documents strictly after the (sort value, id) pair in the sort order. MongoDB sorts null and missing
 * values before every other value, and `$lt`/`$gt` never match null, so nulls need their own terms: they
 * are the first page going up and the last pages going down.
 */
export const toAfterCondition = (
  path: string,
  direction: SortDirection,
  after: NonNullable<ListQuery['after']>,
): Filter<StoredRow> => {
  const beyond = direction === 'asc' ? '$gt' : '$lt';
  const tie = { [path]: after.value, id: { [beyond]: after.id } };
  if (after.value === null) return direction === 'asc' ? { $or: [tie, { [path]: { $ne: null } }] } : tie;
  const past = { [path]: { [beyond]: after.value } };
  return direction === 'asc' ? { $or: [past, tie] } : { $or: [past, tie, { [path]: null }] };
};

export const toMongoFilter = (spec: CollectionSpec, query: ListQuery): Filter<StoredRow> => {
  const conditions = query.filters.map((filter) => toMongoCondition(spec, filter));
  if (query.after) {
    conditions.push(toAfterCondition(fieldPath(spec, query.sort.field), query.sort.direction, query.after));
  }
  // $and rather than merging the conditions into one object: two filters may constrain the same field.
  return {
    tenantId: query.tenantId,
    deleted: { $ne: true },
    ...(conditions.length > 0 && { $and: conditions }),
  };
};

/** The id breaks ties, so the order is total and keyset pages neither skip nor repeat documents. */
export const toMongoSort = (spec: CollectionSpec, query: ListQuery): Record<string, 1 | -1> => {
  const direction = query.sort.direction === 'asc' ? 1 : -1;
  return { [fieldPath(spec, query.sort.field)]: direction, id: direction };
};

/**
 * Replaces the stored document only when it is below the change's position. When the guard does not match,
 * the upsert inserts a second document with the same _id and fails with a duplicate key.
 */
export const toGuardedReplace = (change: DocumentChange): ReplaceOneModel<StoredRow> => {
  const { tenantId, id, position } = change;
  return {
    filter: { _id: storedId(change), position: { $lt: position } },
    replacement:
      change.doc === null
        ? { tenantId, id, position, doc: null, deleted: true }
        : { tenantId, id, position, doc: change.doc },
    upsert: true,
  };
};

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
