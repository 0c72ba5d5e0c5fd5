import type { Middleware } from 'koa';

/** The API's policy: JSON loads nothing and may not be framed. */
export const apiContentSecurityPolicy = "default-src 'none'; frame-ancestors 'none'";

/**
 * Headers every response carries, each only where the route did not set its own: a route that serves a
 * page (the docs page, /docs) sets its own Content-Security-Policy, with `contentSecurityPolicy()` below,
 * and routes that may be cached (media) set their own Cache-Control. Strict-Transport-Security only when
 * the service is reached over https (PUBLIC_URL), since browsers ignore it over http anyway.
 */
export const securityHeaders = ({
  strictTransportSecurity,
}: {
  strictTransportSecurity: boolean;
}): Middleware => {
  const defaults: [string, string][] = [
    ['X-Content-Type-Options', 'nosniff'],
    ['Referrer-Policy', 'no-referrer'],
    ['X-Frame-Options', 'DENY'],
    ['Content-Security-Policy', apiContentSecurityPolicy],
    ['Cache-Control', 'no-store'],
    ...(strictTransportSecurity
      ? [['Strict-Transport-Security', 'max-age=31536000'] as [string, string]]
      : []),
  ];
  return async (ctx, next) => {
    await next();
    for (const [name, value] of defaults) if (!ctx.res.hasHeader(name)) ctx.set(name, value);
  };
};

/** Route middleware: this route's own Content-Security-Policy instead of the API's. */
export const contentSecurityPolicy =
  (policy: string): Middleware =>
  async (ctx, next) => {
    ctx.set('Content-Security-Policy', policy);
    await next();
  };
