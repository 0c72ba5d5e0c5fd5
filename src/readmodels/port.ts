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

/**
 * Blue/green: a collection built beside the live one (its physical name, with its own checkpoint) takes the
 * live one's place. See ReadModelStore.swap.
 */
export interface SwapRequest {
  /** The logical collection the API, the runners and the workers address, e.g. `observations`. */
  collection: string;
  /** The projection that keeps `collection` live: its checkpoint becomes the source's. */
  projection: string;
  /** The physical name the source was ensured under (`ensureCollection(spec, source)`). */
  source: string;
  /** The checkpoint the source was built under. */
  sourceProjection: string;
  /**
   * Only this tenant's documents: they are replaced by the source's, the other tenants' stay, and the live
   * checkpoint does not move. Without it the whole collection is replaced.
   */
  tenantId?: string;
}

export interface ProjectionState {
  checkpoint: number;
  /** The last failure of the projection's runner, cleared by its next successful batch. */
  lastError: { message: string; at: string } | null;
}

/**
 * An event a projection could not apply (its fold threw, or the store refused the document), set aside so
 * that the projection goes on with the next event: one tenant's bad event never holds up the others.
 * Keyed by projection and position; parking the same one again replaces its error and time.
 */
export interface ParkedProjectionEvent {
  projection: string;
  /** The event's global position. */
  position: number;
  tenantId: string;
  eventId: string;
  eventType: string;
  error: string;
  /** ISO 8601 UTC time of the last failure. */
  parkedAt: string;
}

/** Thrown by a commit that lost a race with a swap: the runner resubscribes from the stored checkpoint. */
export class CollectionSwappedError extends Error {
  // The name is what src/core/store-failures.ts recognises it by: core code does not import the read side.
  override readonly name = 'CollectionSwappedError';
  constructor(projection: string) {
    super(`The read model of ${projection} was swapped while a batch was being committed`);
  }
}

export interface ReadModelStore {
  readonly kind: 'sqlite' | 'mongodb' | 'postgres';
  /**
   * Creates the collection and its indexes if they do not exist. With `physicalName`, creates a separate
   * collection of the same shape under that name (a rebuild or a snapshot), which get, list and commit then
   * address by that name; the logical `spec.name` is unaffected until a swap. With `indexes: false` the
   * declared indexes are left out (a bulk build is faster without them); a later call without it adds them.
   */
  ensureCollection(
    spec: CollectionSpec,
    physicalName?: string,
    options?: { indexes?: boolean },
  ): Promise<void>;
  get<D>(collection: string, key: DocumentKey): Promise<StoredDocument<D> | null>;
  /** Several documents at once, in the order of the keys: null where there is none (or a deleted one). */
  getMany<D>(collection: string, keys: readonly DocumentKey[]): Promise<(StoredDocument<D> | null)[]>;
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
  /** The checkpoint with the runner's last error. */
  getProjectionState(projection: string): Promise<ProjectionState>;
  /** Keeps (or, with null, clears) the last error of a projection's runner, for `projections status`. */
  recordError(projection: string, message: string | null): Promise<void>;
  /** Records an event the projection could not apply (or replaces the record of the same projection and position). */
  parkEvent(parked: ParkedProjectionEvent): Promise<void>;
  /** The parked events of one projection, or of all, by projection and position. */
  listParked(projection?: string): Promise<ParkedProjectionEvent[]>;
  /** Removes a parked event from the list; false when it was not parked. */
  unpark(projection: string, position: number): Promise<boolean>;
  /** Removes the projection's checkpoint and every document of its collection (tests and rebuilds). */
  reset(projection: string, collection: string): Promise<void>;
  /**
   * Atomically puts the source collection in the live one's place and the source's checkpoint in the live
   * projection's; the replaced collection and the source's checkpoint are removed. The live runners, which
   * address the logical name, follow. Refuses, answering false and changing nothing, while the live
   * checkpoint is past the source's: the source must catch up first, or the runners would skip events.
   */
  swap(request: SwapRequest): Promise<boolean>;
  /** Removes a physical collection made with `ensureCollection(spec, physicalName)`; a no-op if absent. */
  dropCollection(physicalName: string): Promise<void>;
  ping(): Promise<void>;
  close(): Promise<void>;
}
