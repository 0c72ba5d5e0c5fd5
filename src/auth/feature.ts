import type { Feature } from '../feature.js';
import { routesOnly } from '../feature.js';
import { loginApi } from './login.api.js';
import { oauthApi } from './oauth.api.js';
import { authOperations, authSchemas } from './openapi.js';

/** Logins, refresh tokens, the OAuth 2.0 token endpoint and discovery. */
export const authFeature: Feature = {
  name: 'auth',
  projections: [],
  openapi: { operations: authOperations, schemas: authSchemas },
  wire: routesOnly((context) => [oauthApi(context), loginApi(context)]),
};
