import { auditFeature } from './audit/feature.js';
import { authFeature } from './auth/feature.js';
import { mergeEventSchemas, type UpcasterRegistry } from './core/upcasting.js';
import { credentialsFeature } from './credentials/feature.js';
import { cvFeature } from './cv/feature.js';
import type { Feature } from './feature.js';
import { historyFeature } from './history/feature.js';
import { locationsFeature } from './locations/feature.js';
import { mediaFeature } from './media/feature.js';
import { observationsFeature } from './observations/feature.js';
import type { RegisteredProjection } from './readmodels/registered.js';
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

/**
 * The features' event schema histories, which every store is opened with (openStores): its reads upcast
 * to them and its appends are stamped with their current versions. A value, never a registration as a
 * side effect of an import, so a store opened without them does not compile.
 */
export const eventSchemas: UpcasterRegistry = mergeEventSchemas(
  features.map((feature) => feature.eventSchemas),
);

/**
 * Every read model the service keeps: the service runs them all, the CLI rebuilds and exports them. Each
 * feature names its own (src/<feature>/feature.ts); the definitions are in projections/, one file each.
 */
export const projections: readonly RegisteredProjection[] = features.flatMap(
  (feature) => feature.projections,
);

/** Names as typed on the command line: `cv-jobs` and `cv_jobs` are the same. */
const normalize = (name: string) => name.replace(/-/g, '_');

export const findProjection = (name: string): RegisteredProjection | undefined =>
  projections.find((entry) => entry.projection.name === normalize(name));

export const findExport = (name: string): RegisteredProjection | undefined =>
  projections.find((entry) => entry.export && normalize(entry.export.name) === normalize(name));
