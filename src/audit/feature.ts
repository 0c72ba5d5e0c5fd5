import { streamHeadsProjection } from '../../projections/stream-heads.js';
import type { Feature } from '../feature.js';
import { routesOnly } from '../feature.js';

/**
 * Tamper evidence: the stream heads the daily digests are computed from. No routes: the digests are
 * scheduled by the service (src/service.ts) and verified with the CLI.
 */
export const auditFeature: Feature = {
  name: 'audit',
  projections: [{ projection: streamHeadsProjection, partition: 'tenant' }],
  openapi: { operations: () => [] },
  wire: routesOnly(() => []),
};
