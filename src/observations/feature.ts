import { observationsProjection } from '../../projections/observations.js';
import type { Feature } from '../feature.js';
import { routesOnly } from '../feature.js';
import { columns } from '../readmodels/registered.js';
import { observationsApi } from './api.js';
import type { Observation } from './observation.js';
import { observationOperations, observationSchemas } from './openapi.js';
import { observationEventSchemas } from './upcasters.js';

/** Field observations (their media and history are the features in src/media and src/history). */
export const observationsFeature: Feature = {
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
  openapi: { operations: observationOperations, schemas: observationSchemas },
  eventSchemas: observationEventSchemas,
  wire: routesOnly((context) => [
    observationsApi({ ...context, projection: context.projections.of(observationsProjection) }),
  ]),
};
