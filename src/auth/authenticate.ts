import type { Context } from 'koa';
import { LRUCache } from 'lru-cache';
import { readAggregate } from '../core/command-handler.js';
import { UnauthorizedError } from '../core/errors.js';
import type { Clock } from '../core/ids.js';
import { streamName } from '../core/streams.js';
import type { EventStore } from '../eventstore/port.js';
import { apiKeyDecider } from '../credentials/secret-credential.decider.js';
import { apiKeyPrefix, parseCredential } from '../credentials/credential-strings.js';
import type { Principal, TenantPrincipal } from '../core/principal.js';
import type { Authenticator } from '../http/guard.js';
import type { Revocations } from './revocations.js';
import { constantTimeEqual, hashSecret, sameSecret } from '../credentials/secrets.js';
import type { Keyring } from './signing-keys.js';
import type { TokenSettings } from './tokens.js';
import { verifyAccessToken } from './tokens.js';

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
const apiKeyAsBearer = () =>
  new UnauthorizedError(
    'That is an API key sent as a bearer token: send it in the X-API-Key header instead (X-API-Key: obs_…)',
    'invalid_token',
  );

/**
 * Turns a request's credentials into a principal. Verified keys and tokens are cached in memory by the
 * hash of the credential; the revocation set is consulted on every request, cached or not.
 */
export const authenticator = (deps: AuthenticatorDeps): Authenticator => {
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
    // A common first mistake, told as such: the key's own prefix says what it is, whoever sent it.
    if (!sentKey && bearer!.startsWith(apiKeyPrefix)) throw apiKeyAsBearer();
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
