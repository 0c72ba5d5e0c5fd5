import Router from '@koa/router';
import Koa from 'koa';
import { idempotencyCaller } from './core/principal.js';
import { tenantIdPattern } from './core/ids.js';
import type { FeatureConsumer, RouteContext, WiredFeature } from './feature.js';
import { problemMiddleware } from './http/problem.js';
import { healthApi, storeFailures, type HealthSources } from './http/health.js';
import { requestContext } from './http/request-context.js';
import { cors } from './http/cors.js';
import { idempotentPosts } from './http/idempotency.js';
import { refuseNulBytes } from './http/nul-bytes.js';
import type { IdempotencyStore } from './http/idempotency-store.js';
import { rateLimit, type RequestWindows } from './http/rate-limit.js';
import { securityHeaders } from './http/security-headers.js';
import type { HttpSettings } from './config.js';
import { openApiApi } from './openapi/api.js';
import { openApiDocument } from './openapi/document.js';
import { queryParametersOf, refuseUnknownQueryParameters } from './http/query-parameters.js';
import { consoleRoutes, type ConsoleSettings } from './console/serve.js';
import type { MetricsMode } from './config.js';
import type { Metrics } from './observability/metrics.js';
import { httpTiming, metricsRoute } from './observability/metrics-http.js';

export interface AppDeps extends RouteContext {
  /** Every feature, wired by the service (src/features.ts): the app mounts their routes in that order. */
  features: readonly WiredFeature<FeatureConsumer | null>[];
  /** Idempotency-Key records (src/stores.ts). */
  idempotency: IdempotencyStore;
  /** The rate limit's counts (src/stores.ts); in memory when absent. */
  requestWindows?: RequestWindows;
  /** Idempotency TTL, rate limit, CORS origins (src/config.ts), and whether PUBLIC_URL is https. */
  http: Pick<
    HttpSettings,
    'idempotencyTtlMs' | 'idempotencyLeaseMs' | 'rateLimit' | 'corsOrigins' | 'trustProxy'
  > & {
    https: boolean;
  };
  /** IDEMPOTENCY_SECRET_KEY: seals the kept Idempotency-Key answers (src/http/idempotency-seal.ts). */
  idempotencySecretKey: string;
  /** What readiness reports besides the stores: the consumers, the drain, the storage (src/http/health.ts). */
  health: HealthSources;
  /** Request timing, and GET /metrics on this port when METRICS=platform (src/observability/metrics-http.ts). */
  metrics?: { instruments: Metrics; mode: MetricsMode };
  /** The console's map tiles (CONSOLE_TILE_URL); none when absent. */
  console?: ConsoleSettings;
}

/**
 * The HTTP application: middleware order is request context, security headers, CORS, problems, rate limit,
 * problems again (for the routes), then routes. Idempotency-Key is part of each guarded POST route, after
 * its guard (see idempotentPosts).
 */
export const createApp = (deps: AppDeps): Koa => {
  const app = new Koa();
  // Behind TRUST_PROXY hops, ctx.ip is the client's address from X-Forwarded-For; otherwise the socket's.
  app.proxy = deps.http.trustProxy > 0;
  app.maxIpsCount = deps.http.trustProxy;
  // Errors are answered by problemMiddleware; Koa's own handler would only log them a second time.
  app.silent = true;

  const root = new Router();
  // Writes refused for a full or read-only store, from the problem middleware to readiness.
  const failures = deps.health.storeFailures ?? storeFailures();
  const onStoreFailure = (error: Parameters<typeof failures.record>[0]) => failures.record(error);
  root.use(healthApi({ ...deps, health: { ...deps.health, storeFailures: failures } }).routes());
  root.param('tenantId', (id, ctx, next) => {
    if (!tenantIdPattern.test(id)) {
      ctx.status = 404;
      return;
    }
    return next();
  });

  for (const feature of deps.features) for (const api of feature.routes(deps)) root.use(api.routes());
  // Built once: served at /v1/openapi.json, and the query parameters each route takes are read from it.
  const document = openApiDocument({ publicUrl: deps.tokens.issuer });
  root.use(openApiApi({ publicUrl: deps.tokens.issuer, document }).routes());
  refuseUnknownQueryParameters(root, queryParametersOf(document));
  // After the guard, so that a credential that may not call the route gets its 401/403, never a replay.
  idempotentPosts(root, {
    store: deps.idempotency,
    clock: deps.clock,
    logger: deps.logger,
    ttlMs: deps.http.idempotencyTtlMs,
    leaseMs: deps.http.idempotencyLeaseMs,
    maxBodyBytes: Math.max(deps.bodyLimit, deps.mediaMaxBytes),
    secretKey: deps.idempotencySecretKey,
    renderErrors: problemMiddleware(deps.logger, { onStoreFailure }),
    callerOf: (ctx) => idempotencyCaller(ctx.state.principal),
  });

  app.use(requestContext(deps.logger));
  if (deps.metrics) app.use(httpTiming(deps.metrics.instruments));
  // Cross-cutting behaviour (docs/api.md#cross-cutting-behaviour): security headers and CORS on every
  // response, errors included; then the rate limit, whose own refusals the outer problem middleware
  // renders. The inner one renders route errors, and the Idempotency-Key refusals of the routes.
  app.use(securityHeaders({ strictTransportSecurity: deps.http.https }));
  app.use(cors(deps.http.corsOrigins));
  app.use(problemMiddleware(deps.logger, { onStoreFailure }));
  if (deps.http.rateLimit) {
    app.use(
      rateLimit({
        policy: deps.http.rateLimit,
        auth: deps.auth,
        windows: deps.requestWindows,
      }),
    );
  }
  app.use(problemMiddleware(deps.logger, { onStoreFailure }));
  if (deps.metrics) app.use(metricsRoute(deps.metrics.mode, deps.metrics.instruments, deps.auth));
  // The tenant console (a page, not an API route): outside the router, so outside the OpenAPI document.
  app.use(consoleRoutes({ publicUrl: deps.tokens.issuer, settings: deps.console ?? { tiles: null } }));
  app.use(refuseNulBytes());
  app.use(root.routes());
  app.use(root.allowedMethods());
  return app;
};
