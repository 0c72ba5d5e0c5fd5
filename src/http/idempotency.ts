import type Router from '@koa/router';
import { Stream } from 'node:stream';
import type { Context, Middleware } from 'koa';
import type { Logger } from 'pino';
import getRawBody from 'raw-body';
import { problemType, UnavailableError } from '../core/errors.js';
import type { Clock } from '../core/ids.js';
import { idempotencySeal, type IdempotencySeal } from './idempotency-seal.js';
import {
  writableShareOfLease,
  type IdempotencyId,
  type IdempotencyStore,
  type StoredResponse,
} from './idempotency-store.js';

declare module 'koa' {
  interface DefaultState {
    /** The body as read, kept for the idempotency fingerprint (see readBody in body.ts). */
    rawBody?: Buffer;
    /** Throws when the request may no longer write: see writeGuard. */
    beforeWrite?: () => void;
  }
}

/** The Idempotency-Key header is malformed. */
export class InvalidIdempotencyKeyError extends problemType(
  400,
  'invalid-idempotency-key',
  'The Idempotency-Key header is not valid',
) {}

/** Another request with the same key has not finished yet. */
export class IdempotencyKeyInFlightError extends problemType(
  409,
  'idempotency-key-in-flight',
  'A request with this Idempotency-Key is still being handled',
) {
  override get headers(): Record<string, string> {
    return { 'Retry-After': '1' };
  }
}

/**
 * The request ran so long (a stalled process, a paused machine) that its hold on the key was about to end
 * or had ended, when another request with the key may run: it wrote nothing, so the write happens once.
 */
export class IdempotencyKeyLapsedError extends UnavailableError {
  override readonly slug = 'idempotency-key-lapsed';
  override readonly title = 'The request outlived its hold on the Idempotency-Key';
}

/** The key was used before for another request: another route, body or scope set. */
export class IdempotencyKeyReusedError extends problemType(
  422,
  'idempotency-key-reused',
  'The Idempotency-Key was used for a different request',
) {}

export interface IdempotencyOptions {
  store: IdempotencyStore;
  clock: Clock;
  logger: Logger;
  /** How long a completed response is replayed (IDEMPOTENCY_TTL, 24 h by default). */
  ttlMs: number;
  /**
   * How long a claim holds its key (IDEMPOTENCY_LEASE, 5 minutes by default): a process that dies holding
   * it blocks the key no longer, and a request may start writing only in its first three quarters.
   */
  leaseMs?: number;
  /** The largest body any route accepts: the bodies of requests with a key are buffered up to this size. */
  maxBodyBytes: number;
  /** IDEMPOTENCY_SECRET_KEY: seals the kept bodies and keys the request fingerprints. */
  secretKey: string;
  /** Renders the route's errors as problems, so that the answer kept is the one the client got. */
  renderErrors: Middleware;
  /**
   * The caller the route's guard admitted, or undefined when it admitted none: the guards are the
   * authentication's (src/core/principal.ts, idempotencyCaller), which http/ does not import.
   */
  callerOf: (ctx: Context) => IdempotencyCaller | undefined;
}

/** What a kept answer is bound to of its caller: the credential's identity and its exact scope set. */
export interface IdempotencyCaller {
  actor: string;
  scopes: readonly string[];
}

/** The route the router matched: its method and path template, e.g. `POST /v1/tenants/:tenantId/api-keys`. */
interface MatchedRoute {
  method: string;
  path: string;
}

/** Printable ASCII, space included (but not at either end: Node trims header values). */
const validKey = /^[\x20-\x7e]{1,255}$/;

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

/**
 * Final answers are kept, except server errors and "try again" answers: those release the key. A lost race
 * (409 `version-conflict`) is one of those: the same request run again reads the stream anew and may well
 * succeed, so the key must not hold the conflict for a day.
 */
const keeps = (ctx: Context): boolean => {
  const { status } = ctx;
  if (status >= 500 || status === 408 || status === 429) return false;
  return !(status === 409 && (ctx.body as { type?: unknown } | null)?.type === '/problems/version-conflict');
};

const paramsOf = (ctx: Context) =>
  Object.entries((ctx.params ?? {}) as Record<string, string>).sort(([a], [b]) => (a < b ? -1 : 1));

/**
 * Everything a kept answer is bound to besides the body: the route the router matched and its parameters
 * (not the raw path, which routing reads case-insensitively), the query, the credential's identity and its
 * exact scope set. A request that differs in any of them is another request (422), never a replay.
 */
const bindingOf = (ctx: Context, route: MatchedRoute, caller: IdempotencyCaller) => ({
  route: `${route.method} ${route.path}`,
  params: paramsOf(ctx),
  query: ctx.querystring,
  actor: caller.actor,
  scopes: [...caller.scopes].sort(),
});

/** The records' namespace: the route's tenant (or `-`) and the credential's identity, kept across tokens. */
const idOf = (ctx: Context, caller: IdempotencyCaller, key: string): IdempotencyId => ({
  scope: `${(ctx.params as Record<string, string | undefined>).tenantId ?? '-'}|${caller.actor}`,
  key,
});

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
 * Idempotency-Key on one route (IETF draft-ietf-httpapi-idempotency-key-header). It runs after the route's
 * guard, so the guard's 401, 403 or 404 comes first, with or without a key, and the caller it admitted is
 * known (`callerOf`).
 *
 * The key is claimed before the body is read, so a second request with it gets 409 while the first is
 * still uploading. The body is then buffered once, fingerprinted, and left on `ctx.state.rawBody`, where
 * readJsonBody and the media upload read it.
 */
const idempotentRoute = (
  options: IdempotencyOptions,
  seal: IdempotencySeal,
  route: MatchedRoute,
): Middleware => {
  const { store, clock, logger, ttlMs, maxBodyBytes } = options;
  const leaseMs = options.leaseMs ?? 5 * 60_000;
  const log = (ctx: Context) => ctx.state.logger ?? logger;

  const readBody = (ctx: Context): Promise<Buffer> =>
    getRawBody(ctx.req, { length: ctx.get('Content-Length') || undefined, limit: maxBodyBytes });

  const release = async (ctx: Context, id: IdempotencyId, token: string) => {
    try {
      await store.release(id, token);
    } catch (error) {
      log(ctx).warn({ err: error }, 'idempotency key not released; it stays blocked until its lease ends');
    }
  };

  return async (ctx, next) => {
    const header = ctx.headers['idempotency-key'];
    const caller = options.callerOf(ctx);
    if (ctx.method !== route.method || header === undefined || !caller) {
      await next();
      return;
    }
    const key = Array.isArray(header) ? '' : header;
    if (!validKey.test(key) || key.trim() !== key) {
      throw new InvalidIdempotencyKeyError('Idempotency-Key must be 1 to 255 printable ASCII characters');
    }
    const id = idOf(ctx, caller, key);
    const binding = bindingOf(ctx, route, caller);
    const now = clock().getTime();
    const claim = await store.claim(id, now, now + leaseMs);

    if (claim.outcome === 'in-flight') {
      throw new IdempotencyKeyInFlightError(
        'A request with this Idempotency-Key has not finished yet; retry when it has',
      );
    }
    if (claim.outcome === 'completed') {
      const { fingerprint, response } = claim.record;
      if (seal.fingerprint(binding, await readBody(ctx)) !== fingerprint) {
        throw new IdempotencyKeyReusedError(
          'This Idempotency-Key was already used for another request (another route, body or scope set); use a new key',
        );
      }
      const opened = seal.open(id, fingerprint, response);
      if (!opened) {
        log(ctx).warn({ key }, 'a kept idempotent response does not open under IDEMPOTENCY_SECRET_KEY');
        throw new IdempotencyKeyReusedError(
          'The answer kept for this Idempotency-Key can no longer be replayed; use a new key',
        );
      }
      replay(ctx, opened);
      return;
    }

    const { token } = claim;
    ctx.state.beforeWrite = writeGuard(clock, now + leaseMs * writableShareOfLease);
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
    const response = keeps(ctx) ? capture(ctx) : null;
    if (!response) {
      await release(ctx, id, token);
      return;
    }
    try {
      const fingerprint = seal.fingerprint(binding, body);
      const kept = await store.complete(
        id,
        token,
        { fingerprint, response: seal.seal(id, fingerprint, response) },
        clock().getTime() + ttlMs,
      );
      if (!kept)
        log(ctx).warn({ key }, 'idempotency claim lost before the response was kept: its lease ran out');
    } catch (error) {
      // The response stands; a retry with the key may run the request again once the claim is gone.
      log(ctx).warn({ err: error }, 'idempotent response not kept');
      await release(ctx, id, token);
    }
  };
};

/**
 * The check a request holding a key makes before its first append. Past `writableUntil` (three quarters of
 * the lease) it writes nothing: the last quarter is for the append it starts to commit, before the lease
 * ends and another request with the key may claim it and run. Once a first append has started, the
 * request's later appends (a tenant's admin key after the tenant) go ahead, so that none is left half done.
 */
const writeGuard = (clock: Clock, writableUntil: number) => {
  let writing = false;
  return (): void => {
    if (writing) return;
    if (clock().getTime() > writableUntil) {
      throw new IdempotencyKeyLapsedError(
        'This request took so long that another request with its Idempotency-Key may run; it wrote nothing. Retry with the same key: you get the answer of the request that ran, or it runs now',
      );
    }
    writing = true;
  };
};

/**
 * Puts Idempotency-Key handling into every POST route that has a guard (requireScope or requirePlatform),
 * right after the guard, followed by `renderErrors`: the one place where routes become idempotent. Routes
 * without a guard (the login, refresh and token endpoints) never get it: their answers are fresh secrets,
 * and retrying them is already safe. Being chosen by route, not by path, it holds however the path is spelt.
 * Call it once the router has all its routes.
 */
export const idempotentPosts = (router: Router, options: IdempotencyOptions): void => {
  const seal = idempotencySeal(options.secretKey);
  for (const layer of router.stack) {
    if (!layer.methods.includes('POST')) continue;
    const guardAt = layer.stack.findIndex(
      (middleware) => (middleware as { guard?: unknown }).guard !== undefined,
    );
    if (guardAt === -1) continue;
    const route = { method: 'POST', path: String(layer.path) };
    layer.stack.splice(
      guardAt + 1,
      0,
      idempotentRoute(options, seal, route) as (typeof layer.stack)[number],
      options.renderErrors as (typeof layer.stack)[number],
    );
  }
};
