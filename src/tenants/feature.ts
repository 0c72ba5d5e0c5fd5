import { tenantsDomain } from './domain.js';
import type { Feature } from '../feature.js';
import { routesOnly } from '../feature.js';
import { tenantsApi } from './api.js';
import { tenantOperations, tenantSchemas } from './openapi.js';

/** Tenants, created and read by the platform administrator. */
export const tenantsFeature: Feature = {
  ...tenantsDomain,
  openapi: { operations: tenantOperations, schemas: tenantSchemas },
  wire: routesOnly((context) => [tenantsApi(context)]),
};
