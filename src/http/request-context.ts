import { randomUUID } from 'node:crypto';
import type { Middleware } from 'koa';
import type { Logger } from 'pino';

const acceptableId = /^[A-Za-z0-9._:-]{8,128}$/;

/**
 * Gives every request an id (the caller's X-Request-Id when it is sane, a new uuid otherwise), echoes it
 * on the response, and logs one structured line per request with a child logger that carries the id.
 */
export const requestContext =
  (logger: Logger): Middleware =>
  async (ctx, next) => {
    const incoming = ctx.get('X-Request-Id');
    const requestId = acceptableId.test(incoming) ? incoming : randomUUID();
    const correlation = ctx.get('X-Correlation-Id');
    ctx.state.requestId = requestId;
    ctx.state.correlationId = acceptableId.test(correlation) ? correlation : requestId;
    ctx.state.logger = logger.child({ requestId });
    ctx.set('X-Request-Id', requestId);
    const started = process.hrtime.bigint();
    try {
      await next();
    } finally {
      const ms = Number(process.hrtime.bigint() - started) / 1e6;
      (ctx.state.logger as Logger).info(
        { method: ctx.method, path: ctx.path, status: ctx.status, ms: Math.round(ms * 10) / 10 },
        'request',
      );
    }
  };
