import type { FeatureDomain } from '../feature.js';
import { visitsProjection } from '../../projections/visits.js';
import { columns } from '../readmodels/registered.js';
import type { Visit } from './decider.js';

/**
 * The visits feature's read models and event schemas, without its routes and workers, for the
 * stores and the CLI (src/domains.ts).
 */
export const visitsDomain: FeatureDomain = {
  name: 'visits',
  projections: [
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
  ],
};
