import type { FeatureDomain } from '../feature.js';
import { observationsProjection } from '../../projections/observations.js';
import { columns } from '../readmodels/registered.js';
import type { Observation } from './observation.js';
import { observationEventSchemas } from './upcasters.js';

/**
 * The observations feature's read models and event schemas, without its routes and workers, for the
 * stores and the CLI (src/domains.ts).
 */
export const observationsDomain: FeatureDomain = {
  name: 'observations',
  projections: [
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
  ],
  eventSchemas: observationEventSchemas,
};
