import type { CvJob } from '../src/cv/decider.js';
import type { Location } from '../src/locations/decider.js';
import type { Observation } from '../src/observations/observation.js';
import type { Projection } from '../src/readmodels/projection.js';
import type { Visit } from '../src/visits/decider.js';
import { cvJobsProjection, pendingCvJobsProjection } from './cv-jobs.js';
import { locationsProjection } from './locations.js';
import { observationsProjection } from './observations.js';
import { apiKeysProjection, oauthClientsProjection } from './secret-credentials.js';
import { streamHeadsProjection } from './stream-heads.js';
import { tenantsProjection } from './tenants.js';
import { usersProjection } from './users.js';
import { visitsProjection } from './visits.js';
import { deliveriesProjection, deliveryAttemptsProjection, webhooksProjection } from './webhooks.js';

/** How analysts get a read model out: `npm run cli -- export <name>`. */
export interface ExportSpec {
  /** The name on the command line, e.g. `cv-jobs`. */
  name: string;
  /** A declared field every document has: exports page through the collection by it, then by id. */
  sortField: string;
  /** The CSV columns, in order: the document's top-level fields (nested ones as JSON text). */
  columns: readonly string[];
}

export interface RegisteredProjection {
  projection: Projection<unknown>;
  /**
   * `tenant`: each document belongs to the tenant of its events, so one tenant's documents can be rebuilt
   * alone (`--tenant`). `platform`: one partition for every tenant (tenants, credentials, work queues).
   */
  partition: 'tenant' | 'platform';
  export?: ExportSpec;
}

const columns = <T>(...names: (keyof T & string)[]): readonly string[] => names;

/** Every read model the service keeps, by projection name: the service runs them all, the CLI rebuilds them. */
export const projections: readonly RegisteredProjection[] = [
  {
    projection: observationsProjection,
    partition: 'tenant',
    export: {
      name: 'observations',
      sortField: 'createdAt',
      columns: columns<Observation>(
        'id',
        'tenantId',
        'observedAt',
        'position',
        'locationId',
        'visitId',
        'notes',
        'attributes',
        'media',
        'createdAt',
        'updatedAt',
        'version',
      ),
    },
  },
  { projection: streamHeadsProjection, partition: 'tenant' },
  {
    projection: cvJobsProjection,
    partition: 'tenant',
    export: {
      name: 'cv-jobs',
      sortField: 'createdAt',
      columns: columns<CvJob>(
        'id',
        'tenantId',
        'observationId',
        'mediaId',
        'sha256',
        'model',
        'status',
        'attempts',
        'result',
        'error',
        'createdAt',
        'startedAt',
        'finishedAt',
        'updatedAt',
        'version',
      ),
    },
  },
  { projection: pendingCvJobsProjection, partition: 'platform' },
  {
    projection: locationsProjection,
    partition: 'tenant',
    export: {
      name: 'locations',
      sortField: 'createdAt',
      columns: columns<Location>(
        'id',
        'tenantId',
        'name',
        'position',
        'boundary',
        'attributes',
        'createdAt',
        'updatedAt',
        'version',
      ),
    },
  },
  {
    projection: visitsProjection,
    partition: 'tenant',
    export: {
      name: 'visits',
      sortField: 'createdAt',
      columns: columns<Visit>(
        'id',
        'tenantId',
        'locationId',
        'startedAt',
        'endedAt',
        'participants',
        'notes',
        'status',
        'observationIds',
        'submittedAt',
        'createdAt',
        'updatedAt',
        'version',
      ),
    },
  },
  { projection: webhooksProjection, partition: 'tenant' },
  { projection: deliveriesProjection, partition: 'platform' },
  { projection: deliveryAttemptsProjection, partition: 'tenant' },
  { projection: tenantsProjection, partition: 'platform' },
  { projection: usersProjection, partition: 'platform' },
  { projection: apiKeysProjection, partition: 'platform' },
  { projection: oauthClientsProjection, partition: 'platform' },
];

/** Names as typed on the command line: `cv-jobs` and `cv_jobs` are the same. */
const normalize = (name: string) => name.replace(/-/g, '_');

export const findProjection = (name: string): RegisteredProjection | undefined =>
  projections.find((entry) => entry.projection.name === normalize(name));

export const findExport = (name: string): RegisteredProjection | undefined =>
  projections.find((entry) => entry.export && normalize(entry.export.name) === normalize(name));
