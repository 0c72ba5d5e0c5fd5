import { credentialsDomain } from './domain.js';
import type { Feature } from '../feature.js';
import { routesOnly } from '../feature.js';
import { credentialsApi } from './api.js';
import { credentialOperations, credentialSchemas } from './openapi.js';

/** A tenant's users, API keys and OAuth clients. */
export const credentialsFeature: Feature = {
  ...credentialsDomain,
  openapi: { operations: credentialOperations, schemas: credentialSchemas },
  wire: routesOnly((context) => [credentialsApi(context)]),
};
