import type { FeatureDomain } from '../feature.js';
import { perTenant } from '../readmodels/registered.js';
import { streamHeadsProjection } from '../../projections/stream-heads.js';

/**
 * The audit feature's read models and event schemas, without its routes and workers, for the
 * stores and the CLI (src/domains.ts).
 */
export const auditDomain: FeatureDomain = {
  name: 'audit',
  projections: [perTenant(streamHeadsProjection)],
};
