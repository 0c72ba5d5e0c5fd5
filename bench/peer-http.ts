import type Router from '@koa/router';
import { isLeft } from 'fp-ts/lib/Either.js';
import type * as t from 'io-ts';
import Koa, { type Context } from 'koa';
import getRawBody from 'raw-body';
import { newId } from '../src/core/ids.js';
import { hashSecret } from '../src/credentials/secrets.js';
import { fieldErrors } from '../src/http/codec.js';
import type { CreateObservationBody } from '../src/observations/codecs.js';

/**
 * What the bench's peers (bench/crud-peer.ts, bench/emmett-peer.ts) share, so that they differ only in how
 * they store: problem+json errors, the API-key check (the key's SHA-256 looked up once, then a Map), the
 * io-ts decoding, the JSON body read as the echo server reads it, `/health`, and a shutdown when the bench
 * goes away.
 */

export const env = (name: string): string => {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is not set`);
  return value;
};

export class Problem extends Error {
  constructor(
    readonly status: number,
    readonly title: string,
    readonly extra: Record<string, unknown> = {},
  ) {
    super(title);
  }
}

// A type, not an interface: bench/emmett-peer.ts keeps principals as pongo documents (records).
export type PeerPrincipal = {
  tenantId: string;
  scopes: string[];
};

/** The principal of a key's hash, or null; asked once per key, the answer kept for every later request. */
export type KeyLookup = (hash: string) => PeerPrincipal | null | Promise<PeerPrincipal | null>;

export const scopeGuard = (lookup: KeyLookup) => {
  const keys = new Map<string, PeerPrincipal | null>();
  return (scope: string): Koa.Middleware =>
    async (ctx, next) => {
      const key = ctx.get('X-API-Key');
      if (!key) throw new Problem(401, 'Unauthorized');
      const hash = hashSecret(key);
      let principal = keys.get(hash);
      if (principal === undefined) {
        principal = await lookup(hash);
        keys.set(hash, principal);
      }
      if (!principal) throw new Problem(401, 'Unauthorized');
      if (principal.tenantId !== tenantOf(ctx)) throw new Problem(404, 'No such tenant');
      if (!principal.scopes.includes(scope)) throw new Problem(403, 'Forbidden');
      await next();
    };
};

export const tenantOf = (ctx: Context): string => (ctx.params as Record<string, string>).tenantId!;

export const decode = <A>(codec: t.Type<A, A, unknown>, value: unknown): A => {
  const result = codec.decode(value);
  if (isLeft(result)) throw new Problem(400, 'Validation failed', { errors: fieldErrors(result.left) });
  return result.right;
};

/** The request's JSON body, read with raw-body and JSON.parse as the echo server reads it. */
export const jsonBody = async (ctx: Context): Promise<unknown> => {
  if (ctx.request.type !== 'application/json') throw new Problem(415, 'Unsupported Media Type');
  const text = await getRawBody(ctx.req, {
    length: ctx.get('Content-Length') || undefined,
    limit: 1024 * 1024,
    encoding: 'utf-8',
  });
  try {
    return JSON.parse(text) as unknown;
  } catch {
    throw new Problem(400, 'The body is not JSON');
  }
};

/** The observation a create answers, shaped as the service's: version 1, no media yet. */
export const newObservation = (tenantId: string, body: t.TypeOf<typeof CreateObservationBody>) => {
  const now = new Date();
  const at = now.toISOString();
  return {
    id: newId('o', now),
    tenantId,
    observedAt: body.observedAt,
    position: body.position ?? null,
    locationId: body.locationId ?? null,
    visitId: body.visitId ?? null,
    notes: body.notes ?? null,
    attributes: body.attributes ?? {},
    media: [] as string[],
    createdAt: at,
    updatedAt: at,
    version: 1,
  };
};

export type PeerObservation = ReturnType<typeof newObservation>;

/**
 * A Koa app with problem+json errors and `/health` around the router's routes, listening on PORT and HOST; `close`
 * runs on SIGTERM or when the bench's end of stdin closes (it was killed), before the process exits.
 */
export const servePeer = (router: Router, close: () => Promise<void> | void): void => {
  const app = new Koa();
  app.silent = true;
  app.use(async (ctx, next) => {
    try {
      await next();
    } catch (error) {
      const problem =
        error instanceof Problem
          ? error
          : new Problem((error as { status?: number }).status ?? 500, (error as Error).message);
      ctx.status = problem.status;
      ctx.type = 'application/problem+json';
      ctx.body = JSON.stringify({
        type: 'about:blank',
        title: problem.title,
        status: problem.status,
        ...problem.extra,
      });
    }
  });
  app.use(async (ctx, next) => {
    if (ctx.method === 'GET' && ctx.path === '/health') ctx.body = { status: 'ok' };
    else await next();
  });
  app.use(router.routes()).use(router.allowedMethods());

  const server = app.listen(Number(process.env.PORT), process.env.HOST ?? '127.0.0.1');
  const shutdown = async () => {
    server.close();
    server.closeIdleConnections();
    await close();
    process.exit(0);
  };
  process.stdin.on('end', () => void shutdown());
  process.stdin.resume();
  process.once('SIGTERM', () => void shutdown());
};
