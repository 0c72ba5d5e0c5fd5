import type { Middleware } from 'koa';
import { STATUS_CODES } from 'node:http';
import type { Logger } from 'pino';
import type { FieldError } from '../core/errors.js';
import { DomainError, StoreBusyError, StoreUnavailableError } from '../core/errors.js';
import { isSqliteBusy } from '../core/sqlite-busy.js';

/** An RFC 9457 problem document. `type` is relative to the service and documented in docs/api.md#errors. */
export interface Problem {
  type: string;
  title: string;
  status: number;
  detail?: string;
  instance?: string;
  errors?: FieldError[];
  [extension: string]: unknown;
}

export const problemContentType = 'application/problem+json';

const typeFor = (slug: string) => `/problems/${slug}`;

const generic = (status: number, slug: string, detail?: string): Problem => ({
  type: typeFor(slug),
  title: STATUS_CODES[status] ?? 'Error',
  status,
  ...(detail ? { detail } : {}),
});

/** raw-body and Koa signal request-level failures with `type` or `status` on the error. */
const fromTransportError = (error: {
  type?: string;
  status?: number;
  expose?: boolean;
  message?: string;
}) => {
  switch (error.type) {
    case 'entity.too.large':
      return generic(413, 'payload-too-large', 'The request body is larger than the configured limit');
    case 'encoding.unsupported':
      return generic(415, 'unsupported-media-type', 'The request body uses an unsupported content encoding');
    case 'request.aborted':
    case 'request.size.invalid':
      return generic(400, 'bad-request', 'The request body was incomplete');
    default:
      if (error.status && error.status >= 400 && error.status < 500) {
        return generic(error.status, 'http-error', error.expose ? error.message : undefined);
      }
      return null;
  }
};

/**
 * Typed errors as they are, a store's "disk full" or "read-only" as StoreUnavailableError, and a SQLite
 * file another process keeps locked as StoreBusyError, wherever on the request path it surfaced: a busy
 * store is a 503 with Retry-After, never a 500.
 */
const asDomainError = (error: unknown): DomainError | null => {
  if (error instanceof DomainError) return error;
  if (isSqliteBusy(error)) return StoreBusyError.after(error);
  return StoreUnavailableError.from(error);
};

export const toProblem = (raw: unknown): Problem | null => {
  const error = asDomainError(raw);
  if (error) {
    return {
      type: typeFor(error.slug),
      title: error.title,
      status: error.status,
      detail: error.message,
      ...error.extensions,
    };
  }
  return typeof raw === 'object' && raw !== null ? fromTransportError(raw) : null;
};

/**
 * The one place errors become HTTP. Typed errors map to their status; anything unexpected is logged with
 * its stack and answered as a bare 500 that reveals nothing internal. Responses the router left empty
 * (no route, wrong method) become problems too. A store that is full or read-only is a 503 with
 * Retry-After, logged, and reported to `onStoreFailure` (readiness shows it).
 */
export const problemMiddleware =
  (
    logger: Logger,
    { onStoreFailure }: { onStoreFailure?: (error: StoreUnavailableError) => void } = {},
  ): Middleware =>
  async (ctx, next) => {
    let problem: Problem | null = null;
    try {
      await next();
      if (ctx.body === undefined || ctx.body === null) {
        if (ctx.status === 404)
          problem = generic(404, 'not-found', `No route matches ${ctx.method} ${ctx.path}`);
        else if (ctx.status === 405)
          problem = generic(405, 'method-not-allowed', `${ctx.method} is not allowed here`);
        else if (ctx.status === 501)
          problem = generic(501, 'not-implemented', `${ctx.method} is not supported`);
      }
    } catch (error) {
      problem = toProblem(error);
      const domain = asDomainError(error);
      if (domain instanceof StoreUnavailableError) {
        (ctx.state.logger ?? logger).error({ err: error, code: domain.code }, 'a store refused a write');
        onStoreFailure?.(domain);
      }
      if (!problem) {
        (ctx.state.logger ?? logger).error({ err: error }, 'unhandled error');
        problem = generic(
          500,
          'internal-error',
          'An unexpected error occurred; quote the request id when reporting it',
        );
      }
      if (domain) ctx.set(domain.headers);
    }
    if (problem) {
      ctx.status = problem.status;
      ctx.type = problemContentType;
      ctx.body = { ...problem, instance: ctx.path, requestId: ctx.state.requestId };
    }
  };
