import type { FeatureDomain } from '../feature.js';
import { locationsProjection } from '../../projections/locations.js';
import { columns } from '../readmodels/registered.js';
import type { Location } from './decider.js';

/**
 * The locations feature's read models and event schemas, without its routes and workers, for the
 * stores and the CLI (src/domains.ts).
 */
export const locationsDomain: FeatureDomain = {
  name: 'locations',
  projections: [
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
  ],
};
