/** Read models: documents built by projections, queried by the list endpoints. */

export type Scalar = string | number | boolean;

export interface FieldSpec {
  /** Dotted path inside the document, e.g. `position.lat`. */
  path: string;
  type: 'text' | 'number';
}

export interface CollectionSpec {
  name: string;
  /** The fields queries may filter and sort on, by the names the queries use. */
  fields: Record<string, FieldSpec>;
  /**
   * Compound indexes, each a list of field names. Every index is prefixed by the tenant and, for keyset
   * pagination, suffixed by the document id.
   */
  indexes: readonly (readonly string[])[];
}

export interface BoundingBox {
  minLon: number;
  minLat: number;
  maxLon: number;
  maxLat: number;
}

export type Filter =
  | { op: 'eq'; field: string; value: Scalar }
  | { op: 'in'; field: string; values: readonly Scalar[] }
  | { op: 'gt' | 'gte' | 'lt' | 'lte'; field: string; value: Scalar }
  | { op: 'prefix'; field: string; value: string }
  /** Points inside the box; a box whose minLon is greater than its maxLon crosses the antimeridian. */
  | { op: 'bbox'; latField: string; lonField: string; box: BoundingBox };

export type SortDirection = 'asc' | 'desc';

export interface ListQuery {
  tenantId: string;
  filters: readonly Filter[];
  /** Sorted by this field, then by id in the same direction, so that the order is total. */
  sort: { field: string; direction: SortDirection };
  limit: number;
  /** Keyset pagination: only documents strictly after this (sort value, id) pair. */
  after?: { value: Scalar | null; id: string };
}

export interface StoredDocument<D = unknown> {
  doc: D;
  /** Position of the last event applied to the document: a redelivered event at or below it is a no-op. */
  position: number;
}

/** A listed document as the JSON text the store holds, with what a keyset cursor needs. */
export interface JsonRow {
  json: string;
  id: string;
  sortValue: Scalar | null;
}

export interface DocumentKey {
  tenantId: string;
  id: string;
}

export interface DocumentChange extends DocumentKey {
  collection: string;
  position: number;
  /** The new document, or null to delete it. */
  doc: unknown;
}

export interface ReadModelStore {
  readonly kind: 'sqlite' | 'mongodb';
  /** Creates the collection and its indexes if they do not exist. */
  ensureCollection(spec: CollectionSpec): Promise<void>;
  get<D>(collection: string, key: DocumentKey): Promise<StoredDocument<D> | null>;
  list<D>(collection: string, query: ListQuery): Promise<D[]>;
  /**
   * The same list as JSON text: the list endpoints answer with it as it is, without parsing and
   * re-serializing every document on the hot path.
   */
  listJson(collection: string, query: ListQuery): Promise<JsonRow[]>;
  /**
   * Writes the changes and moves the projection's checkpoint as one unit: one transaction where the
   * backend has them, per-document position guards otherwise. A change whose position is not above the
   * stored document's position is ignored, so redelivered events never apply twice.
   */
  commit(projection: string, changes: readonly DocumentChange[], checkpoint: number): Promise<void>;
  /** The projection's checkpoint, 0 when it has none. */
  getCheckpoint(projection: string): Promise<number>;
  /** Removes the projection's checkpoint and every document of its collection (tests and rebuilds). */
  reset(projection: string, collection: string): Promise<void>;
  ping(): Promise<void>;
  close(): Promise<void>;
}
