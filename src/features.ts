import { auditFeature } from './audit/feature.js';
import { authFeature } from './auth/feature.js';
import { credentialsFeature } from './credentials/feature.js';
import { cvFeature } from './cv/feature.js';
import type { Feature } from './feature.js';
import { historyFeature } from './history/feature.js';
import { locationsFeature } from './locations/feature.js';
import { mediaFeature } from './media/feature.js';
import { observationsFeature } from './observations/feature.js';
import { tenantsFeature } from './tenants/feature.js';
import { visitsFeature } from './visits/feature.js';
import { webhooksFeature } from './webhooks/feature.js';

/**
 * Every feature of the service, in the order of the OpenAPI document: the app mounts their routes, the
 * service runs their projections and consumers, the CLI rebuilds their read models. A new feature is one
 * more line here (see docs/architecture.md#feature-modules).
 */
export const features: readonly Feature[] = [
  authFeature,
  tenantsFeature,
  credentialsFeature,
  observationsFeature,
  mediaFeature,
  historyFeature,
  locationsFeature,
  visitsFeature,
  cvFeature,
  webhooksFeature,
  auditFeature,
];
