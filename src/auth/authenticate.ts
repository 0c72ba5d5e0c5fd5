import type { Context, Middleware } from 'koa';
import { LRUCache } from 'lru-cache';
import { readAggregate } from '../core/command-handler.js';
import { ForbiddenError, NotFoundError, UnauthorizedError } from '../core/errors.js';
import type { Clock } from '../core/ids.js';
import { streamName } from '../core/streams.js';
import type { EventStore } from '../eventstore/port.js';
import { apiKeyDecider } from '../credentials/secret-credential.decider.js';
import { apiKeyPrefix, parseCredential } from './credential-strings.js';
import type { Principal, TenantPrincipal } from './principal.js';
import type { Revocations } from './revocations.js';
import type { Scope } from './scopes.js';
import { grants } from './scopes.js';
import { constantTimeEqual, hashSecret, sameSecret } from './secrets.js';
import type { Keyring } from './signing-keys.js';
import type { TokenSettings } from './tokens.js';
import { verifyAccessToken } from './tokens.js';

declare module 'koa' {
  /** Set once a request is authenticated (see `authenticate`). */
  interface DefaultState {
    principal?: Principal;
    /** The principal's actor, e.g. `apikey:k_…`: the actor of the events the request writes. */
    actor?: string;
  }
}

export interface AuthenticatorDeps {
  eventStore: EventStore;
  keyring: () => Keyring;
  tokens: TokenSettings;
  platformAdminKey: string;
  revocations: Revocations;
  clock: Clock;
}

/** Longer credentials are refused before any parsing or hashing. */
const maxCredentialLength = 4096;
const cacheSize = 10_000;

const invalid = () => new UnauthorizedError('The credentials are not valid', 'invalid_token');

/**
 * Turns a request's credentials into a principal. Verified keys and tokens are cached in memory by the
 * hash of the credential; the revocation set is consulted on every request, cached or not.
 */
export const authenticator = (deps: AuthenticatorDeps) => {
  const verified = new LRUCache<string, TenantPrincipal>({ max: cacheSize });
  // A token verified under one keyring says nothing once a key is retired: a reloaded keyring empties the cache.
  let verifiedWith = deps.keyring();
  const cachedUnderCurrentKeys = () => {
    const keyring = deps.keyring();
    if (keyring !== verifiedWith) {
      verified.clear();
      verifiedWith = keyring;
    }
    return verified;
  };
  const remember = (key: string, principal: TenantPrincipal) => {
    verified.set(key, principal);
  };

  const verifyApiKey = async (value: string): Promise<TenantPrincipal | null> => {
    const parsed = parseCredential(apiKeyPrefix, value);
    if (!parsed) return null;
    const { state } = await readAggregate(
      deps.eventStore,
      apiKeyDecider,
      streamName('apikey', parsed.tenantId, parsed.id),
    );
    if (
      state.status !== 'present' ||
      state.credential.status !== 'active' ||
      !sameSecret(parsed.secret, state.secretHash)
    ) {
      return null;
    }
    return {
      kind: 'apiKey',
      tenantId: parsed.tenantId,
      scopes: state.credential.scopes,
      actor: `apikey:${parsed.id}`,
      revocableIds: [parsed.id],
    };
  };

  const verifyBearer = (token: string): TenantPrincipal | null => {
    const claims = verifyAccessToken(deps.keyring(), deps.tokens, token, deps.clock());
    if (!claims) return null;
    const [kind, id] = claims.sub.split(':');
    if ((kind !== 'user' && kind !== 'client') || !id) return null;
    return {
      kind,
      tenantId: claims.tenantId,
      scopes: claims.scopes,
      actor: claims.sub,
      revocableIds: claims.sid ? [id, claims.sid] : [id],
      expiresAt: claims.exp * 1000,
    };
  };

  const fresh = (principal: TenantPrincipal | undefined) =>
    principal &&
    !deps.revocations.isRevoked(principal.revocableIds) &&
    (principal.expiresAt === undefined || principal.expiresAt > deps.clock().getTime())
      ? principal
      : undefined;

  const authenticate = async (ctx: Context): Promise<Principal> => {
    const apiKey = ctx.get('X-API-Key');
    const authorization = ctx.get('Authorization');
    const sentKey = ctx.headers['x-api-key'] !== undefined;
    if (!sentKey && !authorization) throw new UnauthorizedError();
    if (
      (sentKey && authorization) ||
      apiKey.length > maxCredentialLength ||
      authorization.length > maxCredentialLength
    ) {
      throw invalid();
    }
    if (sentKey && constantTimeEqual(apiKey, deps.platformAdminKey))
      return { kind: 'platform', actor: 'platform' };

    const bearer = /^Bearer ([A-Za-z0-9._~+/-]+=*)$/i.exec(authorization)?.[1];
    if (!sentKey && !bearer) throw invalid();
    const credential = sentKey ? apiKey : bearer!;
    // The scheme is part of the key: a credential verified as an API key is no bearer token, nor the reverse.
    const cacheKey = `${sentKey ? 'key' : 'bearer'}:${hashSecret(credential)}`;
    const cached = fresh(cachedUnderCurrentKeys().get(cacheKey));
    if (cached) return cached;
    const principal = fresh(
      (sentKey ? await verifyApiKey(credential) : verifyBearer(credential)) ?? undefined,
    );
    if (!principal) throw invalid();
    remember(cacheKey, principal);
    return principal;
  };

  // One answer per request: the rate limiter and the idempotency middleware authenticate before the route does.
  const byRequest = new WeakMap<Context, Promise<Principal>>();
  const authenticateOnce = (ctx: Context): Promise<Principal> => {
    let answer = byRequest.get(ctx);
    if (!answer) {
      answer = authenticate(ctx);
      byRequest.set(ctx, answer);
    }
    return answer;
  };

  return { authenticate: authenticateOnce };
};

export type Authenticator = ReturnType<typeof authenticator>;

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
