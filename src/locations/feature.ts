import { locationsProjection } from '../../projections/locations.js';
import type { Feature } from '../feature.js';
import { routesOnly } from '../feature.js';
import { columns } from '../readmodels/registered.js';
import { locationsApi } from './api.js';
import type { Location } from './decider.js';
import { locationOperations, locationSchemas } from './openapi.js';

/** Named places. */
export const locationsFeature: Feature = {
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
  openapi: { operations: locationOperations, schemas: locationSchemas },
  wire: routesOnly((context) => [
    locationsApi({ ...context, projection: context.projections.of(locationsProjection) }),
  ]),
};
