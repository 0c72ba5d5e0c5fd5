import type Router from '@koa/router';
import type { Logger } from 'pino';
import type { Authenticator } from './http/guard.js';
import type { ClientAttempt, FailureGuard, LoginAttempt } from './auth/rate-limit.js';
import type { Revocations } from './auth/revocations.js';
import type { Keyring } from './auth/signing-keys.js';
import type { TokenSettings } from './auth/tokens.js';
import type { Config } from './config.js';
import type { Clock, IdGenerator } from './core/ids.js';
import type { ConsumerStatus } from './core/supervisor.js';
import type { UpcasterRegistry } from './core/upcasting.js';
import type { CursorCodec } from './http/cursor.js';
import type { DecodeQueue } from './media/decode-queue.js';
import type { DecodeLimits } from './media/header.js';
import type { Metrics, MetricsSources } from './observability/metrics.js';
import type { BuiltOperation } from './openapi/operation.js';
import type { Schema } from './openapi/schema.js';
import type { ProjectionHandles } from './readmodels/handles.js';
import type { RegisteredProjection } from './readmodels/registered.js';
import type { Stores } from './stores.js';

/**
 * A feature module (src/<feature>/feature.ts) is everything the service knows of one feature, in one value:
 * its read models, its OpenAPI operations, the event types it has versioned, its routes and its consumers.
 * The service, the app, the projection registry and the OpenAPI document loop over the list in
 * src/features.ts; none of them names a feature.
 */
/**
 * What a feature keeps, apart from its routes and workers: what the stores are opened with and what the
 * CLI rebuilds and exports. In a module of its own (`src/<feature>/domain.ts`, listed in src/domains.ts),
 * so that the CLI loads the read models and event schemas without the HTTP service.
 */
export interface FeatureDomain {
  name: string;
  /** The read models it owns; their definitions are in projections/, one file per read model. */
  projections: readonly RegisteredProjection[];
  /** The schema history of its event types that have had more than one version (src/core/upcasting.ts). */
  eventSchemas?: UpcasterRegistry;
}

export interface Feature<C extends FeatureConsumer | null = FeatureConsumer | null> extends FeatureDomain {
  /** Its part of the OpenAPI document (src/openapi/document.ts assembles them). */
  openapi: FeatureOpenApi;
  /** Makes its consumer, once per service, and the routes that may use it. */
  wire: (context: ServiceContext) => WiredFeature<C>;
}

export interface FeatureOpenApi {
  operations: () => BuiltOperation[];
  /** Component schemas its operations refer to. */
  schemas?: Record<string, Schema>;
  /** What it POSTs to subscribers: the document's `webhooks`. */
  webhooks?: () => Record<string, unknown>;
}

export interface WiredFeature<C extends FeatureConsumer | null> {
  /** Its background work in the worker role, or null. */
  consumer: C;
  routes: (context: RouteContext) => Router[];
}

/**
 * A feature's background work: started and stopped with the worker duties (src/duties.ts), and stopped
 * early, with the drain's deadline, when a shutdown begins.
 */
export interface FeatureConsumer {
  start(): Promise<void> | void;
  stop(options?: { deadlineMs?: number }): Promise<void>;
  consumers(): ConsumerStatus[];
  /** Releases what it holds (connections, mailers), after the duties have stopped. */
  close?(): Promise<void> | void;
  /**
   * What it cannot do in this process, one sentence each (a CV model whose weights are corrupt): readiness
   * lists them as a warning, since the rest works.
   */
  unavailable?(): string[];
  /** The scrape-time values it provides (src/observability/metrics.ts). */
  metrics?: Partial<Pick<MetricsSources, 'outboxDepth' | 'cvJobs'>>;
}

/** What a feature's consumer is made from. */
export interface ServiceContext {
  config: Config;
  stores: Stores;
  clock: Clock;
  logger: Logger;
  metrics: Metrics;
  /** The image decode queue that uploads and CV jobs share. */
  decodes: DecodeQueue;
}

/** What a feature's routes may use, besides their own consumer. */
export interface RouteContext {
  eventStore: Stores['eventStore'];
  readModels: Stores['readModels'];
  blobs: Stores['blobs'];
  /** The read models the service runs, by their definition: `projections.of(observationsProjection)`. */
  projections: ProjectionHandles;
  cursors: CursorCodec;
  clock: Clock;
  ids: IdGenerator;
  logger: Logger;
  bodyLimit: number;
  mediaMaxBytes: number;
  decodeLimits: DecodeLimits;
  decodes: DecodeQueue;
  consistencyTimeoutMs: number;
  auth: Authenticator;
  keyring: () => Keyring;
  tokens: TokenSettings;
  refreshTokenTtlSeconds: number;
  revocations: Revocations;
  /** Failed logins and client authentications (src/auth/rate-limit.ts). */
  failures: { logins: FailureGuard<LoginAttempt>; clients: FailureGuard<ClientAttempt> };
}

/**
 * What the routes of a feature's resources take from the route context: the stores they write and list, the
 * guard's authenticator, the clock and ids their commands stamp, the cursors of their pages and the body limit.
 */
export type ResourceRouteContext = Pick<
  RouteContext,
  'eventStore' | 'readModels' | 'cursors' | 'auth' | 'clock' | 'ids' | 'bodyLimit'
>;

/** A feature whose routes need nothing made once per service: no consumer. */
export const routesOnly = (routes: (context: RouteContext) => Router[]) => (): WiredFeature<null> => ({
  consumer: null,
  routes,
});
