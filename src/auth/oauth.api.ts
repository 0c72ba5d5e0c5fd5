import Router from '@koa/router';
import type { Context } from 'koa';
import getRawBody from 'raw-body';
import { eventMetadata, readAggregate } from '../core/command-handler.js';
import { commandContext } from '../http/command-context.js';
import { randomUUID } from 'node:crypto';
import type { Clock } from '../core/ids.js';
import { streamName } from '../core/streams.js';
import { oauthClientDecider } from '../credentials/secret-credential.decider.js';
import type { EventStore } from '../eventstore/port.js';
import { parseClientId } from '../credentials/credential-strings.js';
import type { ClientAttempt, FailureGuard } from './rate-limit.js';
import type { Revocations } from './revocations.js';
import { grants, isScope, scopes, type Scope } from '../core/scopes.js';
import { sameSecret } from '../credentials/secrets.js';
import type { Keyring } from './signing-keys.js';
import type { TokenSettings } from './tokens.js';
import { signAccessToken } from './tokens.js';

export interface OAuthApiDeps {
  eventStore: EventStore;
  keyring: () => Keyring;
  tokens: TokenSettings;
  revocations: Revocations;
  failures: { clients: FailureGuard<ClientAttempt> };
  clock: Clock;
}

type OAuthErrorCode = 'invalid_request' | 'invalid_client' | 'invalid_scope' | 'unsupported_grant_type';

/**
 * RFC 6749 §5.2 errors. OAuth clients expect `application/json` with `error`, so this is the one place that
 * does not answer `application/problem+json`; the body still carries the problem members beside `error`.
 */
class OAuthError extends Error {
  constructor(
    readonly code: OAuthErrorCode,
    readonly description: string,
  ) {
    super(description);
  }
  get status() {
    return this.code === 'invalid_client' ? 401 : 400;
  }
}

const sendOAuthError = (ctx: Context, error: OAuthError) => {
  ctx.status = error.status;
  ctx.set('Cache-Control', 'no-store');
  if (error.code === 'invalid_client') ctx.set('WWW-Authenticate', 'Basic realm="observation-service"');
  ctx.body = {
    error: error.code,
    error_description: error.description,
    type: `/problems/oauth-${error.code.replace(/_/g, '-')}`,
    title: error.description,
    status: error.status,
    requestId: ctx.state.requestId,
  };
};

/** Client credentials from HTTP Basic (RFC 6749 §2.3.1: each part form-urlencoded) or from the body. */
const clientCredentials = (ctx: Context, form: URLSearchParams): { id: string; secret: string } => {
  const basic = /^Basic ([A-Za-z0-9+/]+=*)$/i.exec(ctx.get('Authorization'))?.[1];
  const inBody = form.has('client_id') || form.has('client_secret');
  if (basic && inBody) throw new OAuthError('invalid_request', 'Authenticate with one method only');
  if (basic) {
    const decoded = Buffer.from(basic, 'base64').toString('utf8');
    const colon = decoded.indexOf(':');
    if (colon < 0) throw new OAuthError('invalid_client', 'Client authentication failed');
    const unescape = (s: string) => decodeURIComponent(s.replace(/\+/g, ' '));
    try {
      return { id: unescape(decoded.slice(0, colon)), secret: unescape(decoded.slice(colon + 1)) };
    } catch {
      throw new OAuthError('invalid_client', 'Client authentication failed');
    }
  }
  const id = form.get('client_id');
  const secret = form.get('client_secret');
  if (!id || !secret) throw new OAuthError('invalid_client', 'Client authentication failed');
  return { id, secret };
};

/**
 * The scopes of the token: the client's own, or the subset it asks for. `admin` implies every scope, so an
 * admin client may ask for a narrower token (least privilege for one job) rather than only for `admin`.
 */
const requestedScopes = (form: URLSearchParams, allowed: readonly Scope[]): Scope[] => {
  const scope = form.get('scope');
  if (scope === null) return [...allowed];
  const requested = [...new Set(scope.split(' ').filter(Boolean))];
  const unknown = requested.filter((s) => !isScope(s) || !grants(allowed, s));
  if (requested.length === 0 || unknown.length > 0) {
    throw new OAuthError(
      'invalid_scope',
      `The client may not request: ${unknown.join(' ') || '(empty scope)'}`,
    );
  }
  return requested as Scope[];
};

/** The OAuth 2.0 client-credentials token endpoint (RFC 6749 §4.4) and the discovery documents. */
export const oauthApi = (deps: OAuthApiDeps): Router => {
  const router = new Router();

  router.post('/v1/oauth/token', async (ctx) => {
    try {
      if (ctx.request.type !== 'application/x-www-form-urlencoded') {
        throw new OAuthError('invalid_request', 'Send the request as application/x-www-form-urlencoded');
      }
      const form = new URLSearchParams(await getRawBody(ctx.req, { limit: 16 * 1024, encoding: 'utf-8' }));
      const grantType = form.get('grant_type');
      if (!grantType) throw new OAuthError('invalid_request', 'grant_type is required');
      if (grantType !== 'client_credentials') {
        throw new OAuthError('unsupported_grant_type', 'Only the client_credentials grant is supported');
      }
      const credentials = clientCredentials(ctx, form);
      const attempt = { clientId: credentials.id.slice(0, 200), address: ctx.ip };
      // A refusal here is a 429 problem (src/http/problem.ts): RFC 6749 has no error code for it.
      await deps.failures.clients.begin(attempt);
      const client = parseClientId(credentials.id);
      const stream = client && streamName('oauthclient', client.tenantId, client.id);
      const { state } = stream
        ? await readAggregate(deps.eventStore, oauthClientDecider, stream)
        : { state: null };
      if (
        !client ||
        !stream ||
        state?.status !== 'present' ||
        state.credential.status !== 'active' ||
        deps.revocations.isRevoked([client.id]) ||
        !sameSecret(credentials.secret, state.secretHash)
      ) {
        throw new OAuthError('invalid_client', 'Client authentication failed');
      }
      await deps.failures.clients.succeeded(attempt);
      const granted = requestedScopes(form, state.credential.scopes);
      const now = deps.clock();
      const { token: accessToken, jti } = signAccessToken(
        deps.keyring(),
        deps.tokens,
        { sub: `client:${client.id}`, tenantId: client.tenantId, scopes: granted },
        now,
      );
      // Every issued token is an event, so auditors see which client got what and when. It goes to an audit
      // stream of its own, which nothing reads on the hot path, so the client's stream stays small.
      await deps.eventStore.appendToStream(
        streamName('oauthtoken', client.tenantId, client.id),
        [
          {
            id: randomUUID(),
            type: 'OAuthTokenIssued',
            data: {
              clientId: client.id,
              jti,
              scopes: granted,
              expiresAt: new Date(now.getTime() + deps.tokens.accessTokenTtlSeconds * 1000).toISOString(),
            },
            metadata: eventMetadata(commandContext(ctx, deps, client.tenantId, `client:${client.id}`)),
          },
        ],
        'any',
      );
      ctx.set('Cache-Control', 'no-store');
      ctx.set('Pragma', 'no-cache');
      ctx.body = {
        access_token: accessToken,
        token_type: 'Bearer',
        expires_in: deps.tokens.accessTokenTtlSeconds,
        scope: granted.join(' '),
      };
    } catch (error) {
      if (error instanceof OAuthError) sendOAuthError(ctx, error);
      else throw error;
    }
  });

  router.get('/.well-known/jwks.json', (ctx) => {
    ctx.set('Cache-Control', 'public, max-age=300');
    ctx.body = deps.keyring().jwks;
  });

  /**
   * RFC 8414 metadata. `response_types_supported` is left out: it lists what the authorization endpoint
   * takes, and there is none (client credentials only). §3.2 forbids the empty array a literal reading of
   * "REQUIRED" would give, and leaving it out is what the OAuth working group advises for such servers.
   * Every URL is built from PUBLIC_URL, which is also the tokens' issuer: a client that reaches the service
   * under another host must not trust this document (RFC 8414 §3.3 has it compare the issuer).
   */
  router.get('/.well-known/oauth-authorization-server', (ctx) => {
    const issuer = deps.tokens.issuer;
    ctx.body = {
      issuer,
      token_endpoint: `${issuer}/v1/oauth/token`,
      jwks_uri: `${issuer}/.well-known/jwks.json`,
      grant_types_supported: ['client_credentials'],
      token_endpoint_auth_methods_supported: ['client_secret_basic', 'client_secret_post'],
      scopes_supported: scopes,
      service_documentation: `${issuer}/docs`,
    };
  });

  return router;
};
