import type { FeatureDomain } from '../feature.js';
import { platformWide } from '../readmodels/registered.js';
import { apiKeysProjection, oauthClientsProjection } from '../../projections/secret-credentials.js';
import { usersProjection } from '../../projections/users.js';

/**
 * The credentials feature's read models and event schemas, without its routes and workers, for the
 * stores and the CLI (src/domains.ts).
 */
export const credentialsDomain: FeatureDomain = {
  name: 'credentials',
  projections: [
    platformWide(usersProjection),
    platformWide(apiKeysProjection),
    platformWide(oauthClientsProjection),
  ],
};
