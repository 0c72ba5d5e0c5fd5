import type { Feature } from '../feature.js';
import { routesOnly } from '../feature.js';
import { historyApi } from './api.js';
import { historyOperations, historySchemas } from './openapi.js';

/** The event history: an observation's versions, and the tenant's events. */
export const historyFeature: Feature = {
  name: 'history',
  projections: [],
  openapi: { operations: historyOperations, schemas: historySchemas },
  wire: routesOnly((context) => [historyApi(context)]),
};
