import type { Scope } from './scopes.js';

/**
 * Who is calling. `platform` is the operator's PLATFORM_ADMIN_KEY: it may create tenants and nothing
 * else. Every other principal belongs to exactly one tenant.
 */
export type Principal =
  | { kind: 'platform'; actor: 'platform' }
  | {
      kind: 'apiKey' | 'user' | 'client';
      tenantId: string;
      scopes: readonly Scope[];
      /** Recorded as the actor of the events this principal causes, e.g. `apikey:k_01…`. */
      actor: string;
      /** Ids whose revocation ends this credential: the key, the user or client, the login session. */
      revocableIds: readonly string[];
      /** When a token expires (ms since epoch); undefined for API keys. */
      expiresAt?: number;
    };

export type TenantPrincipal = Exclude<Principal, { kind: 'platform' }>;

/**
 * What an Idempotency-Key answer is bound to of the principal the route's guard admitted (src/http/idempotency.ts,
 * which knows no principal): its identity and its exact scope set.
 */
export const idempotencyCaller = (principal: Principal | undefined) =>
  principal && {
    actor: principal.actor,
    scopes: principal.kind === 'platform' ? ['platform'] : principal.scopes,
  };
