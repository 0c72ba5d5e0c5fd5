import { observationsProjection } from '../../projections/observations.js';
import { visitsProjection } from '../../projections/visits.js';
import { visitsDomain } from './domain.js';
import type { Feature } from '../feature.js';
import { routesOnly } from '../feature.js';
import { visitsApi } from './api.js';
import { visitOperations, visitSchemas } from './openapi.js';

/** Field visits to locations; a submitted visit records its observations. */
export const visitsFeature: Feature = {
  ...visitsDomain,
  openapi: { operations: visitOperations, schemas: visitSchemas },
  wire: routesOnly((context) => [
    visitsApi({
      ...context,
      projection: context.projections.of(visitsProjection),
      observations: context.projections.of(observationsProjection),
    }),
  ]),
};
