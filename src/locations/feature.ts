import { locationsProjection } from '../../projections/locations.js';
import { locationsDomain } from './domain.js';
import type { Feature } from '../feature.js';
import { routesOnly } from '../feature.js';
import { locationsApi } from './api.js';
import { locationOperations, locationSchemas } from './openapi.js';

/** Named places. */
export const locationsFeature: Feature = {
  ...locationsDomain,
  openapi: { operations: locationOperations, schemas: locationSchemas },
  wire: routesOnly((context) => [
    locationsApi({ ...context, projection: context.projections.of(locationsProjection) }),
  ]),
};
