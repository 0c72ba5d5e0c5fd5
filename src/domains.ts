import { auditDomain } from './audit/domain.js';
import { mergeEventSchemas, type UpcasterRegistry } from './core/upcasting.js';
import { credentialsDomain } from './credentials/domain.js';
import { cvDomain } from './cv/domain.js';
import type { FeatureDomain } from './feature.js';
import { locationsDomain } from './locations/domain.js';
import { observationsDomain } from './observations/domain.js';
import type { RegisteredProjection } from './readmodels/registered.js';
import { tenantsDomain } from './tenants/domain.js';
import { visitsDomain } from './visits/domain.js';
import { webhooksDomain } from './webhooks/domain.js';

/**
 * What the features keep, without their routes and workers: the read models and event schemas of every
 * feature that has any (src/features.ts lists the features themselves; test/unit/domains.test.ts holds the
 * two lists together). The CLI reads only this, so it starts without loading the HTTP service.
 */
export const domains: readonly FeatureDomain[] = [
  tenantsDomain,
  credentialsDomain,
  observationsDomain,
  locationsDomain,
  visitsDomain,
  cvDomain,
  webhooksDomain,
  auditDomain,
];

/**
 * The features' event schema histories, which every store is opened with (openStores): its reads upcast
 * to them and its appends are stamped with their current versions. A value, never a registration as a
 * side effect of an import, so a store opened without them does not compile.
 */
export const eventSchemas: UpcasterRegistry = mergeEventSchemas(domains.map((domain) => domain.eventSchemas));

/**
 * Every read model the service keeps: the service runs them all, the CLI rebuilds and exports them. Each
 * feature names its own (src/<feature>/domain.ts); the definitions are in projections/, one file each.
 */
export const projections: readonly RegisteredProjection[] = domains.flatMap((domain) => domain.projections);

/** Names as typed on the command line: `cv-jobs` and `cv_jobs` are the same. */
const normalize = (name: string) => name.replace(/-/g, '_');

export const findProjection = (name: string): RegisteredProjection | undefined =>
  projections.find((entry) => entry.projection.name === normalize(name));

export const findExport = (name: string): RegisteredProjection | undefined =>
  projections.find((entry) => entry.export && normalize(entry.export.name) === normalize(name));
