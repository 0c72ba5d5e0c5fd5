import type { Projection } from './projection.js';

/** How analysts get a read model out: `obs export <name>`. */
export interface ExportSpec {
  /** The name on the command line, e.g. `cv-jobs`. */
  name: string;
  /** A declared field every document has: exports page through the collection by it, then by id. */
  sortField: string;
  /** The CSV columns, in order: the document's top-level fields (nested ones as JSON text). */
  columns: readonly string[];
}

/** A read model as the service runs it and the CLI rebuilds and exports it; each feature names its own. */
export interface RegisteredProjection {
  projection: Projection<unknown>;
  /**
   * `tenant`: each document belongs to the tenant of its events, so one tenant's documents can be rebuilt
   * alone (`--tenant`). `platform`: one partition for every tenant (tenants, credentials, work queues).
   */
  partition: 'tenant' | 'platform';
  export?: ExportSpec;
}

/** A read model whose documents each belong to the tenant of their events, with no export. */
export const perTenant = (projection: Projection<unknown>): RegisteredProjection => ({
  projection,
  partition: 'tenant',
});

/** A read model with one partition for every tenant (tenants, credentials, work queues), with no export. */
export const platformWide = (projection: Projection<unknown>): RegisteredProjection => ({
  projection,
  partition: 'platform',
});

/** The export columns of a document type, checked against its fields. */
export const columns = <T>(...names: (keyof T & string)[]): readonly string[] => names;
