import { observationsProjection } from '../../projections/observations.js';
import { observationsDomain } from './domain.js';
import type { Feature } from '../feature.js';
import { routesOnly } from '../feature.js';
import { observationsApi } from './api.js';
import { observationOperations, observationSchemas } from './openapi.js';

/** Field observations (their media and history are the features in src/media and src/history). */
export const observationsFeature: Feature = {
  ...observationsDomain,
  openapi: { operations: observationOperations, schemas: observationSchemas },
  wire: routesOnly((context) => [
    observationsApi({ ...context, projection: context.projections.of(observationsProjection) }),
  ]),
};
