import type { FeatureDomain } from '../feature.js';
import { platformWide } from '../readmodels/registered.js';
import { tenantsProjection } from '../../projections/tenants.js';

/**
 * The tenants feature's read models and event schemas, without its routes and workers, for the
 * stores and the CLI (src/domains.ts).
 */
export const tenantsDomain: FeatureDomain = {
  name: 'tenants',
  projections: [platformWide(tenantsProjection)],
};
