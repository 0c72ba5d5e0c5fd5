import type { Middleware } from 'koa';

/** CORS_ORIGINS: any origin (`*`), these origins, or none (null: no CORS headers at all). */
export type CorsOrigins = '*' | readonly string[] | null;

const originPattern = /^https?:\/\/[A-Za-z0-9.-]+(?::\d{1,5})?$|^https?:\/\/\[[0-9A-Fa-f:.]+\](?::\d{1,5})?$/;

/**
 * Parses CORS_ORIGINS: `*`, or a comma-separated list of origins (`https://app.example.com`, scheme, host
 * and port, no path or trailing slash); empty means off. Undefined when an entry is not an origin.
 */
export const parseCorsOrigins = (text: string): CorsOrigins | undefined => {
  const trimmed = text.trim();
  if (!trimmed) return null;
  if (trimmed === '*') return '*';
  const origins = trimmed.split(',').map((origin) => origin.trim());
  return origins.every((origin) => originPattern.test(origin)) ? origins : undefined;
};

/** What a browser may send: the credentials, the idempotency key, conditional requests and the body type. */
export const corsAllowedHeaders = [
  'Authorization',
  'X-API-Key',
  'Idempotency-Key',
  'If-Match',
  'If-None-Match',
  'Content-Type',
  'X-Request-Id',
  'X-Correlation-Id',
] as const;

/** What a browser's script may read beyond the CORS-safelisted response headers. */
export const corsExposedHeaders = [
  'Location',
  'ETag',
  'X-Position',
  'X-Request-Id',
  'RateLimit',
  'RateLimit-Policy',
  'Retry-After',
  'Idempotency-Replayed',
  'WWW-Authenticate',
  'Export-After-Position',
  'Export-Head-Position',
] as const;

const allowedMethods = 'GET, HEAD, POST, PUT, PATCH, DELETE';
/** How long a browser may cache a preflight answer, in seconds. */
const maxAgeSeconds = 600;

/**
 * Cross-origin requests from browsers, off unless CORS_ORIGINS is set. A preflight (OPTIONS with
 * Access-Control-Request-Method) from an allowed origin is answered here with 204; other requests from an
 * allowed origin get Access-Control-Allow-Origin and Access-Control-Expose-Headers, errors included. An
 * origin not in the list gets no CORS headers, which is how a browser learns it is refused. No cookies are
 * involved (credentials travel in headers), so Access-Control-Allow-Credentials is never sent.
 */
export const cors = (origins: CorsOrigins): Middleware => {
  if (origins === null) return (_ctx, next) => next();
  const allows = (origin: string) => origins === '*' || origins.includes(origin);
  return async (ctx, next) => {
    // The answer depends on Origin unless every origin gets the same one.
    if (origins !== '*') ctx.vary('Origin');
    const origin = ctx.get('Origin');
    if (!origin || !allows(origin)) {
      await next();
      return;
    }
    ctx.set('Access-Control-Allow-Origin', origins === '*' ? '*' : origin);
    if (ctx.method === 'OPTIONS' && ctx.get('Access-Control-Request-Method')) {
      ctx.vary('Access-Control-Request-Headers');
      ctx.set('Access-Control-Allow-Methods', allowedMethods);
      ctx.set('Access-Control-Allow-Headers', corsAllowedHeaders.join(', '));
      ctx.set('Access-Control-Max-Age', String(maxAgeSeconds));
      ctx.status = 204;
      return;
    }
    ctx.set('Access-Control-Expose-Headers', corsExposedHeaders.join(', '));
    await next();
  };
};
