import type { FeatureDomain } from '../feature.js';
import { cvJobsProjection, pendingCvJobsProjection } from '../../projections/cv-jobs.js';
import { columns, platformWide } from '../readmodels/registered.js';
import type { CvJob } from './decider.js';

/**
 * The cv feature's read models and event schemas, without its routes and workers, for the
 * stores and the CLI (src/domains.ts).
 */
export const cvDomain: FeatureDomain = {
  name: 'cv',
  projections: [
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
    platformWide(pendingCvJobsProjection),
  ],
};
