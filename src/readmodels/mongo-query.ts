import type { Filter, IndexDescription, ReplaceOneModel } from 'mongodb';
import type {
  CollectionSpec,
  DocumentChange,
  DocumentKey,
  Filter as ReadModelFilter,
  ListQuery,
  SortDirection,
} from './port.js';

// How the MongoDB read models (mongo.ts) store documents, and translate queries, indexes and guarded writes.

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
