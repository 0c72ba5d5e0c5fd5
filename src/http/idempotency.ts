import { createHash } from 'node:crypto';
import { Stream } from 'node:stream';
import type { Context, Middleware } from 'koa';
import type { Logger } from 'pino';
import getRawBody from 'raw-body';
import type { Authenticator } from '../auth/authenticate.js';
import type { Principal } from '../auth/principal.js';
import { DomainError } from '../core/errors.js';
import type { Clock } from '../core/ids.js';
import type { IdempotencyId, IdempotencyStore, StoredResponse } from './idempotency-store.js';

/** The Idempotency-Key header is malformed. */
export class InvalidIdempotencyKeyError extends DomainError {
  readonly status = 400;
  readonly slug = 'invalid-idempotency-key';
  readonly title = 'The Idempotency-Key header is not valid';
}

/** Another request with the same key has not finished yet. */
export class IdempotencyKeyInFlightError extends DomainError {
  readonly status = 409;
  readonly slug = 'idempotency-key-in-flight';
  readonly title = 'A request with this Idempotency-Key is still being handled';
  override get headers(): Record<string, string> {
    return { 'Retry-After': '1' };
  }
}

/** The key was used before for a request with another method, path or body. */
export class IdempotencyKeyReusedError extends DomainError {
  readonly status = 422;
  readonly slug = 'idempotency-key-reused';
  readonly title = 'The Idempotency-Key was used for a different request';
}

export interface IdempotencyOptions {
  store: IdempotencyStore;
  auth: Authenticator;
  clock: Clock;
  logger: Logger;
  /** How long a completed response is replayed (IDEMPOTENCY_TTL, 24 h by default). */
  ttlMs: number;
  /** How long a claim blocks its key when its process dies before finishing (5 minutes by default). */
  leaseMs?: number;
  /** The largest body any route accepts: the bodies of requests with a key are buffered up to this size. */
  maxBodyBytes: number;
}

/** Printable ASCII, space included (but not at either end: Node trims header values). */
const validKey = /^[\x20-\x7e]{1,255}$/;

/** Token and login endpoints: their answers hold fresh secrets, and retrying them is already safe. */
const excluded = (path: string) => path.startsWith('/v1/auth/') || path.startsWith('/v1/oauth/');

const pathTenant = /^\/v1\/tenants\/(t_[0-9a-z]{1,40})(?:\/|$)/;

/** The response headers that belong to the outcome, and are replayed with it. */
const replayedHeaders = [
  'content-type',
  'location',
  'content-location',
  'etag',
  'last-modified',
  'x-position',
  'cache-control',
  'allow',
] as const;

/** Final answers are kept, except server errors and "try again" answers: those release the key. */
const keeps = (status: number) => status < 500 && status !== 408 && status !== 429;

/** The tenant of the path (or `-`) and the credential's identity: a user or client keeps it across tokens. */
const scopeOf = (ctx: Context, principal: Principal) =>
  `${pathTenant.exec(ctx.path)?.[1] ?? '-'}|${principal.actor}`;

const fingerprintOf = (ctx: Context, body: Buffer) =>
  createHash('sha256').update(`${ctx.method} ${ctx.originalUrl}\n`).update(body).digest('hex');

/** The response Koa is about to send, as bytes; null for a streamed body, which cannot be replayed. */
const capture = (ctx: Context): StoredResponse | null => {
  const body: unknown = ctx.body;
  let bytes: Buffer;
  if (body === undefined || body === null) bytes = Buffer.alloc(0);
  else if (Buffer.isBuffer(body)) bytes = body;
  else if (typeof body === 'string') bytes = Buffer.from(body);
  else if (body instanceof Stream) return null;
  else bytes = Buffer.from(JSON.stringify(body)); // as Koa serializes it
  const headers: Record<string, string> = {};
  for (const name of replayedHeaders) {
    const value = ctx.response.get(name);
    if (value) headers[name] = String(value);
  }
  return { status: ctx.status, headers, body: bytes };
};

const replay = (ctx: Context, response: StoredResponse) => {
  ctx.status = response.status;
  for (const [name, value] of Object.entries(response.headers)) ctx.set(name, value);
  ctx.set('Idempotency-Replayed', 'true');
  if (response.status === 204 || response.status === 304) ctx.body = null;
  else ctx.body = response.body;
};

/**
 * Idempotency-Key on POST (IETF draft-ietf-httpapi-idempotency-key-header). A global middleware that runs
 * before routing, inside the problem middleware that renders route errors (so that it sees, and keeps, the
 * final problem documents): it authenticates the request itself (the authenticator remembers the result
 * for the route's own check) to scope the key to the tenant of the path and the credential's identity.
 *
 * The key is claimed before the body is read, so a second request with it gets 409 while the first is
 * still uploading. The body is then buffered once, fingerprinted, and left on `ctx.state.rawBody`, where
 * readJsonBody and the media upload read it. Requests without a key, other methods, the token and login
 * endpoints, and requests whose credentials do not authenticate (the route answers those 401) pass through.
 */
export const idempotency = (options: IdempotencyOptions): Middleware => {
  const { store, auth, clock, logger, ttlMs, maxBodyBytes } = options;
  const leaseMs = options.leaseMs ?? 5 * 60_000;

  const readBody = (ctx: Context): Promise<Buffer> =>
    getRawBody(ctx.req, { length: ctx.get('Content-Length') || undefined, limit: maxBodyBytes });

  const release = async (ctx: Context, id: IdempotencyId, token: string) => {
    try {
      await store.release(id, token);
    } catch (error) {
      ((ctx.state.logger as Logger | undefined) ?? logger).warn(
        { err: error },
        'idempotency key not released; it stays blocked until its lease ends',
      );
    }
  };

  return async (ctx, next) => {
    const header = ctx.headers['idempotency-key'];
    if (ctx.method !== 'POST' || header === undefined || excluded(ctx.path)) {
      await next();
      return;
    }
    const key = Array.isArray(header) ? '' : header;
    if (!validKey.test(key) || key.trim() !== key) {
      throw new InvalidIdempotencyKeyError('Idempotency-Key must be 1 to 255 printable ASCII characters');
    }
    const principal = await auth.authenticate(ctx).catch(() => null);
    if (!principal) {
      await next(); // the route refuses the credentials, with the details
      return;
    }
    const id: IdempotencyId = { scope: scopeOf(ctx, principal), key };
    const now = clock().getTime();
    const claim = await store.claim(id, now, now + leaseMs);

    if (claim.outcome === 'in-flight') {
      throw new IdempotencyKeyInFlightError(
        'A request with this Idempotency-Key has not finished yet; retry when it has',
      );
    }
    if (claim.outcome === 'completed') {
      const body = await readBody(ctx);
      if (fingerprintOf(ctx, body) !== claim.record.fingerprint) {
        throw new IdempotencyKeyReusedError(
          'This Idempotency-Key was already used for a request with another method, path or body; use a new key',
        );
      }
      replay(ctx, claim.record.response);
      return;
    }

    const { token } = claim;
    let body: Buffer;
    try {
      body = await readBody(ctx);
    } catch (error) {
      await release(ctx, id, token);
      throw error;
    }
    ctx.state.rawBody = body;
    try {
      await next();
    } catch (error) {
      await release(ctx, id, token);
      throw error;
    }
    const response = keeps(ctx.status) ? capture(ctx) : null;
    if (!response) {
      await release(ctx, id, token);
      return;
    }
    try {
      const kept = await store.complete(
        id,
        token,
        { fingerprint: fingerprintOf(ctx, body), response },
        clock().getTime() + ttlMs,
      );
      if (!kept) {
        ((ctx.state.logger as Logger | undefined) ?? logger).warn(
          { key },
          'idempotency claim lost before the response was kept: its lease ran out',
        );
      }
    } catch (error) {
      // The response stands; a retry with the key may run the request again once the claim is gone.
      ((ctx.state.logger as Logger | undefined) ?? logger).warn(
        { err: error },
        'idempotent response not kept',
      );
      await release(ctx, id, token);
    }
  };
};
