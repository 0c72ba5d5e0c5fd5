import { randomUUID } from 'node:crypto';
import type { Context, Middleware, Next } from 'koa';
import type { Logger } from 'pino';
import { inSpan, parseTraceparent, SpanKind, SpanStatusCode, tracingOn } from '../observability/tracing.js';

declare module 'koa' {
  /** What requestContext gives every request, before any other middleware runs. */
  interface DefaultState {
    requestId: string;
    /** The correlation id of the events the request writes (see namedCorrelation). */
    correlationId: string;
    /** The request's logger: carries its request id (and trace id). */
    logger: Logger;
  }
}

const acceptableId = /^[A-Za-z0-9._:-]{8,128}$/;

/**
 * The correlation the caller named: the trace id of a valid W3C traceparent, so that the events of a traced
 * request are found by their trace; else its X-Correlation-Id when it is sane; else null. Without one, the
 * request's events are correlated by the trace it starts here (with traces on), or by its request id.
 */
export const namedCorrelation = (ctx: Context): string | null => {
  const parent = parseTraceparent(ctx.get('traceparent'));
  if (parent) return parent.traceId;
  const correlation = ctx.get('X-Correlation-Id');
  return acceptableId.test(correlation) ? correlation : null;
};

/**
 * The SERVER span of a request, continuing the caller's trace when it sent a valid traceparent. It is named
 * after the route template once routing has found one (`POST /v1/tenants/:tenantId/observations`).
 */
const tracedRequest = (ctx: Context, next: Next, correlateByTrace: boolean): Promise<void> =>
  inSpan(
    ctx.method,
    {
      kind: SpanKind.SERVER,
      // An invalid traceparent is ignored: the request starts a new trace.
      parent: ctx.get('traceparent') || null,
      attributes: {
        'http.request.method': ctx.method,
        'url.path': ctx.path,
        'request.id': ctx.state.requestId,
      },
    },
    async (span) => {
      const traceId = span?.spanContext().traceId;
      if (traceId) {
        ctx.state.logger = ctx.state.logger.child({ traceId });
        if (correlateByTrace) ctx.state.correlationId = traceId;
      }
      try {
        await next();
      } finally {
        const route = typeof ctx._matchedRoute === 'string' ? ctx._matchedRoute : undefined;
        if (route) span?.updateName(`${ctx.method} ${route}`).setAttribute('http.route', route);
        span?.setAttribute('http.response.status_code', ctx.status);
        if (ctx.status >= 500) span?.setStatus({ code: SpanStatusCode.ERROR });
      }
    },
  );

/**
 * Gives every request an id (the caller's X-Request-Id when it is sane, a new uuid otherwise), echoes it
 * on the response, and logs one structured line per request with a child logger that carries the id. With
 * traces on, the request is a span, and the line carries its trace id too.
 */
export const requestContext =
  (logger: Logger): Middleware =>
  async (ctx, next) => {
    const incoming = ctx.get('X-Request-Id');
    const requestId = acceptableId.test(incoming) ? incoming : randomUUID();
    ctx.state.requestId = requestId;
    const named = namedCorrelation(ctx);
    ctx.state.correlationId = named ?? requestId;
    ctx.state.logger = logger.child({ requestId });
    ctx.set('X-Request-Id', requestId);
    const started = process.hrtime.bigint();
    try {
      await (tracingOn() ? tracedRequest(ctx, next, named === null) : next());
    } finally {
      const ms = Number(process.hrtime.bigint() - started) / 1e6;
      ctx.state.logger.info(
        { method: ctx.method, path: ctx.path, status: ctx.status, ms: Math.round(ms * 10) / 10 },
        'request',
      );
    }
  };
