import { apiKeysProjection, oauthClientsProjection } from '../../projections/secret-credentials.js';
import { usersProjection } from '../../projections/users.js';
import type { Feature } from '../feature.js';
import { routesOnly } from '../feature.js';
import { credentialsApi } from './api.js';
import { credentialOperations, credentialSchemas } from './openapi.js';

/** A tenant's users, API keys and OAuth clients. */
export const credentialsFeature: Feature = {
  name: 'credentials',
  projections: [
    { projection: usersProjection, partition: 'platform' },
    { projection: apiKeysProjection, partition: 'platform' },
    { projection: oauthClientsProjection, partition: 'platform' },
  ],
  openapi: { operations: credentialOperations, schemas: credentialSchemas },
  wire: routesOnly((context) => [credentialsApi(context)]),
};
