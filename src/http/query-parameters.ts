import type Router from '@koa/router';
import type { Context, Next } from 'koa';
import { ValidationError } from '../core/errors.js';

/**
 * The query parameters each operation takes, by method and route path (`GET /v1/tenants/:tenantId/…`), or
 * undefined for a route the API does not describe (it is then not checked here).
 */
export type KnownQueryParameters = (method: string, routePath: string) => readonly string[] | undefined;

/** The operations' query parameters as an OpenAPI document lists them. */
export const queryParametersOf = (document: {
  paths: Record<string, Record<string, unknown>>;
}): KnownQueryParameters => {
  const known = new Map<string, string[]>();
  for (const [path, operations] of Object.entries(document.paths)) {
    const routePath = path.replace(/\{(\w+)\}/g, ':$1');
    for (const [method, operation] of Object.entries(operations)) {
      const parameters = (operation as { parameters?: { name: string; in: string }[] }).parameters ?? [];
      known.set(
        `${method.toUpperCase()} ${routePath}`,
        parameters.filter((parameter) => parameter.in === 'query').map((parameter) => parameter.name),
      );
    }
  }
  return (method, routePath) => known.get(`${method === 'HEAD' ? 'GET' : method} ${routePath}`);
};

/**
 * Refuses with 400, naming each, a query parameter the route does not take, as an unknown body field is
 * refused (docs/api.md): `GET …/observations/{id}?fields=id` would otherwise answer as if it were obeyed.
 * Added to every described route of the router, right after its guard, so that a caller without a valid
 * credential still gets its 401 or 403 first; the routes that decode a query check their own values.
 */
export const refuseUnknownQueryParameters = (router: Router, known: KnownQueryParameters): void => {
  for (const layer of router.stack) {
    const path = String(layer.path);
    const refuseUnknown = (ctx: Context, next: Next) => {
      const allowed = known(ctx.method, path);
      const unknown = allowed ? Object.keys(ctx.query).filter((name) => !allowed.includes(name)) : [];
      if (unknown.length > 0)
        throw new ValidationError(unknown.map((name) => ({ path: name, message: 'is not a known field' })));
      return next();
    };
    const guardAt = layer.stack.findIndex(
      (middleware) => (middleware as { guard?: unknown }).guard !== undefined,
    );
    layer.stack.splice(guardAt + 1, 0, refuseUnknown as (typeof layer.stack)[number]);
  }
};
