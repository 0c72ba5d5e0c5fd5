import { observationsProjection } from '../../projections/observations.js';
import { visitsProjection } from '../../projections/visits.js';
import type { Feature } from '../feature.js';
import { routesOnly } from '../feature.js';
import { columns } from '../readmodels/registered.js';
import { visitsApi } from './api.js';
import type { Visit } from './decider.js';
import { visitOperations, visitSchemas } from './openapi.js';

/** Field visits to locations; a submitted visit records its observations. */
export const visitsFeature: Feature = {
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
  openapi: { operations: visitOperations, schemas: visitSchemas },
  wire: routesOnly((context) => [
    visitsApi({
      ...context,
      projection: context.projections.of(visitsProjection),
      observations: context.projections.of(observationsProjection),
    }),
  ]),
};
