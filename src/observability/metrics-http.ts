import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Middleware } from 'koa';
import type { Logger } from 'pino';
import type { Authenticator } from '../http/guard.js';
import { ForbiddenError } from '../core/errors.js';
import { listen } from '../http/listen.js';
import { problemContentType } from '../http/problem.js';
import { statusClass, type Metrics } from './metrics.js';
import type { MetricsMode } from './metrics-modes.js';

export const metricsPath = '/metrics';

declare module 'koa' {
  interface DefaultState {
    /** Set by metricsRoute: the request was GET /metrics, which the router does not match. */
    metricsRoute?: boolean;
  }
}

/**
 * Times every request into `obs_http_request_duration_seconds`. Mounted right inside the request context,
 * so the status is the one answered, problems included. The route is koa-router's template
 * (`/v1/tenants/:tenantId/observations`), never the path: a path holds tenant and resource ids.
 */
export const httpTiming =
  (metrics: Pick<Metrics, 'httpDuration'>): Middleware =>
  async (ctx, next) => {
    const done = metrics.httpDuration.startTimer();
    try {
      await next();
    } finally {
      const matched = (ctx as { _matchedRoute?: unknown })._matchedRoute;
      const route =
        typeof matched === 'string' ? matched : ctx.state.metricsRoute === true ? metricsPath : 'unmatched';
      done({ route, method: ctx.method, status_class: statusClass(ctx.status) });
    }
  };

/**
 * `GET /metrics` on the API's port with METRICS=platform: the platform key alone may read it (401 without
 * a credential or with a wrong one, 403 with a tenant's). Any other mode leaves the path to the router,
 * which answers 404. Mounted inside the problem middleware, which renders the refusals.
 */
export const metricsRoute =
  (mode: MetricsMode, metrics: Pick<Metrics, 'scrape'>, auth: Authenticator): Middleware =>
  async (ctx, next) => {
    if (mode !== 'platform' || ctx.path !== metricsPath || (ctx.method !== 'GET' && ctx.method !== 'HEAD')) {
      await next();
      return;
    }
    ctx.state.metricsRoute = true;
    const principal = await auth.authenticate(ctx);
    if (principal.kind !== 'platform')
      throw new ForbiddenError('Only the platform administrator key may read the metrics');
    const { contentType, body } = await metrics.scrape();
    ctx.set('Cache-Control', 'no-store');
    ctx.type = contentType;
    ctx.body = body;
  };

export interface MetricsListener {
  /** The port it listens on (METRICS_PORT). */
  port: number;
  close: () => Promise<void>;
}

const internalError = JSON.stringify({
  type: '/problems/internal-error',
  title: 'Internal Server Error',
  status: 500,
});

const notFound = (path: string) =>
  JSON.stringify({
    type: '/problems/not-found',
    title: 'Not Found',
    status: 404,
    detail: `Only GET ${metricsPath} and GET /health/ready are served on this port`,
    instance: path,
  });

/**
 * METRICS=port: a plain listener of its own on METRICS_PORT (on HOST) that serves `GET /metrics` without a
 * credential, for a scraper inside the private network; the API's port then has no /metrics at all.
 */
export const startMetricsListener = async (
  { host, port }: { host: string; port: number },
  metrics: Pick<Metrics, 'scrape'>,
  logger: Logger,
  health?: { ready: () => Promise<{ status: number; body: unknown }> },
): Promise<MetricsListener> => {
  const server: Server = createServer((req, res) => {
    const path = (req.url ?? '/').split('?')[0] ?? '/';
    const get = req.method === 'GET' || req.method === 'HEAD';
    // Readiness with its details, for the private network the scraper is on (docs/operations.md#health-and-logs).
    if (health && get && (path === '/health/ready' || path === '/health')) {
      health.ready().then(
        ({ status, body }) =>
          res
            .writeHead(status, {
              'content-type': 'application/json',
              'cache-control': 'no-store',
              ...(status === 503 ? { 'retry-after': '5' } : {}),
            })
            .end(JSON.stringify(body)),
        (error: unknown) => {
          logger.error({ err: error }, 'readiness failed');
          res.writeHead(500, { 'content-type': problemContentType }).end(internalError);
        },
      );
      return;
    }
    if (path !== metricsPath || !get) {
      res.writeHead(404, { 'content-type': problemContentType }).end(notFound(path));
      return;
    }
    metrics.scrape().then(
      ({ contentType, body }) =>
        res.writeHead(200, { 'content-type': contentType, 'cache-control': 'no-store' }).end(body),
      (error: unknown) => {
        logger.error({ err: error }, 'metrics scrape failed');
        res.writeHead(500, { 'content-type': problemContentType }).end(internalError);
      },
    );
  });
  await listen(server, { port, host, setting: 'METRICS_PORT' });
  const bound = (server.address() as AddressInfo).port;
  logger.info({ host, port: bound }, `metrics on http://${host}:${bound}${metricsPath}`);
  return {
    port: bound,
    close: async () => {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
};
