import { auditDomain } from './domain.js';
import type { Feature } from '../feature.js';
import { routesOnly } from '../feature.js';
import { auditOperations, auditSchemas } from './openapi.js';
import { digestsApi } from './digests.api.js';
import { digestOperations, digestSchemas } from './digests.openapi.js';
import { verificationApi } from './verification.api.js';

/**
 * Tamper evidence: the stream heads the daily digests are computed from. The digests are scheduled by the
 * service (src/service.ts); the history is verified with the CLI, or by an admin through the API.
 */
export const auditFeature: Feature = {
  ...auditDomain,
  openapi: {
    operations: () => [...auditOperations(), ...digestOperations()],
    schemas: { ...auditSchemas, ...digestSchemas },
  },
  wire: routesOnly((context) => [verificationApi(context), ...digestsApi(context)]),
};
