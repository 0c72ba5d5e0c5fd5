import type { Context, Middleware } from 'koa';
import { ForbiddenError, NotFoundError } from '../core/errors.js';
import type { Principal } from '../core/principal.js';
import { grants, type Scope } from '../core/scopes.js';

declare module 'koa' {
  /** Set once a request is authenticated (see `authenticate`). */
  interface DefaultState {
    principal?: Principal;
    /** The principal's actor, e.g. `apikey:k_…`: the actor of the events the request writes. */
    actor?: string;
  }
}

/**
 * Turns a request's credentials into a principal, once per request. src/auth/authenticate.ts implements it;
 * the routes get it from the wiring (src/feature.ts's RouteContext) and only guard with it here.
 */
export interface Authenticator {
  authenticate(ctx: Context): Promise<Principal>;
}

/**
 * Route guard: authenticates, keeps the credential inside its own tenant, and checks the scope.
 * Another tenant's path answers 404, as an unknown tenant does: a credential learns nothing about
 * tenants it does not belong to. The platform key passes only where `allowPlatform` is set.
 */
export const requireScope = (
  auth: Authenticator,
  scope: Scope,
  { allowPlatform = false } = {},
): Middleware & { guard: RouteGuard } => {
  const guard: Middleware = async (ctx, next) => {
    const principal = await auth.authenticate(ctx);
    ctx.state.principal = principal;
    ctx.state.actor = principal.actor;
    if (principal.kind === 'platform') {
      if (!allowPlatform)
        throw new ForbiddenError('The platform key may only create and read tenants', scope);
      return next() as Promise<void>;
    }
    const tenantId = (ctx.params as Record<string, string | undefined>).tenantId;
    if (tenantId !== undefined && tenantId !== principal.tenantId) throw new NotFoundError('No such tenant');
    if (!grants(principal.scopes, scope))
      throw new ForbiddenError(`This request needs the scope ${scope}`, scope);
    await next();
  };
  return Object.assign(guard, { guard: { scope, allowPlatform } satisfies RouteGuard });
};

/** Only the platform key: creating and listing tenants. */
export const requirePlatform = (auth: Authenticator): Middleware & { guard: RouteGuard } => {
  const guard: Middleware = async (ctx, next) => {
    const principal = await auth.authenticate(ctx);
    if (principal.kind !== 'platform')
      throw new ForbiddenError('Only the platform administrator key may do this');
    ctx.state.principal = principal;
    ctx.state.actor = principal.actor;
    await next();
  };
  return Object.assign(guard, { guard: { scope: 'platform', allowPlatform: true } satisfies RouteGuard });
};

/**
 * What a route's guard demands, readable from the router's stack (the OpenAPI document is checked against
 * it): a scope, or `platform` for the platform key alone; `allowPlatform` when the platform key passes too.
 */
export interface RouteGuard {
  scope: Scope | 'platform';
  allowPlatform: boolean;
}

/** The guard of a route's middleware stack; undefined for a public route. */
export const routeGuardOf = (stack: readonly unknown[]): RouteGuard | undefined =>
  stack
    .map((middleware) => (middleware as { guard?: RouteGuard }).guard)
    .find((guard): guard is RouteGuard => guard !== undefined);

/** The two guards of an area whose reads and writes take scopes of their own (`locations:read`, `locations:write`). */
export const readWriteGuards = (auth: Authenticator, area: 'observations' | 'locations' | 'cv') => ({
  read: requireScope(auth, `${area}:read`),
  write: requireScope(auth, `${area}:write`),
});
