import Router from '@koa/router';
import type { Context } from 'koa';
import { open, rm } from 'node:fs/promises';
import { join } from 'node:path';
import type { Logger } from 'pino';
import { createHash, timingSafeEqual } from 'node:crypto';
import type { StoreUnavailableError } from '../core/errors.js';
import type { ConsumerStatus } from '../core/supervisor.js';

/**
 * `/health/live` and `/health/ready` (with `/health` as its alias): what an orchestrator or a load balancer
 * asks. Liveness is only "the process answers". Readiness is "send traffic here": the stores answer, the
 * storage takes writes, every consumer runs, and the process is not shutting down. Both stay cheap: one
 * ping per store, one small file write, one read of the head position; no table scans.
 */

/** A consumer as readiness shows it: its supervisor's state, and where it is when it keeps a checkpoint. */
export type ConsumerHealth = ConsumerStatus & { checkpoint?: number; parked?: number };

/** Store writes refused for lack of space or write access, as the HTTP side saw them. */
export interface StoreFailures {
  record(error: StoreUnavailableError): void;
  /** The last one, if it is recent enough to still count. */
  recent(): { code: string; message: string; at: string } | null;
}

/** How long a refused write keeps readiness at 503 after it, unless the write probe still fails. */
export const storeFailureWindowMs = 5000;

export const storeFailures = (windowMs = storeFailureWindowMs, now = Date.now): StoreFailures => {
  let last: { code: string; message: string; at: number } | null = null;
  return {
    record: (error) => {
      last = { code: error.code, message: error.message, at: now() };
    },
    recent: () =>
      last && now() - last.at < windowMs
        ? { code: last.code, message: last.message, at: new Date(last.at).toISOString() }
        : null,
  };
};

/**
 * Writes, flushes and removes a small file in `dir`: a full disk (ENOSPC) or a read-only mount (EROFS)
 * fails it. The embedded stores all live in DATA_DIR, so this asks whether they could write.
 */
export const directoryWriteProbe = (dir: string) => async (): Promise<void> => {
  const file = join(dir, `.write-probe-${process.pid}`);
  try {
    const handle = await open(file, 'w');
    try {
      await handle.writeFile(Buffer.alloc(4096));
      await handle.sync();
    } finally {
      await handle.close();
    }
  } finally {
    await rm(file, { force: true });
  }
};

export interface HealthSources {
  /** Every consumer this process runs (none for ROLE=api). */
  consumers: () => ConsumerHealth[];
  /** True once SIGTERM/SIGINT started the drain. */
  draining: () => boolean;
  /** What cannot work in this process though the rest does (a CV model): a warning, not a failure. */
  unavailable?: () => string[];
  /** Whether this process's PUBLIC_URL is still that of the API processes on its store (fingerprints/issuer.ts). */
  issuer?: () => Check;
  /** A small write to the storage; rejects when it cannot take writes. */
  writeProbe?: () => Promise<void>;
  /** Refused writes; createApp makes one when none is given, and feeds it from its problem middleware. */
  storeFailures?: StoreFailures;
  /**
   * The platform key: a request that sends it gets the checks and consumers. Anonymous readiness says only
   * ready or not, since its details (a database's address, a driver's error) are for the operator.
   */
  platformKey?: string;
}

export interface HealthDeps {
  eventStore: { ping(): Promise<void>; headPosition(): Promise<number> };
  readModels: { ping(): Promise<void> };
  blobs: { ping(): Promise<void> };
  idempotency: { ping(): Promise<void> };
  logger: Logger;
  health: HealthSources & { storeFailures: StoreFailures };
}

export interface Check {
  /** `warn`: something works only in part; the process still takes traffic. */
  status: 'pass' | 'warn' | 'fail';
  error?: string;
}

/** A store that neither answers nor fails is down too: readiness never hangs on it. */
const checkTimeoutMs = 2000;

const within = <T>(task: Promise<T>, ms: number): Promise<T> =>
  new Promise<T>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no answer within ${ms} ms`)), ms);
    task.then(resolve, reject).finally(() => clearTimeout(timer));
  });

const probe = async (task: () => Promise<unknown>): Promise<Check> => {
  try {
    await within(task(), checkTimeoutMs);
    return { status: 'pass' };
  } catch (error) {
    const { code, message } = error as NodeJS.ErrnoException;
    return { status: 'fail', error: code ? `${code}: ${message}` : message };
  }
};

/** Running, or standing by for another process that owns the duty: both are as they should be. */
const consumerOk = (consumer: ConsumerHealth) => consumer.state === 'running' || consumer.state === 'standby';

const unavailableCheck = (unavailable: string[]): Check =>
  unavailable.length > 0 ? { status: 'warn', error: unavailable.join('; ') } : { status: 'pass' };

export const readiness = async (deps: HealthDeps) => {
  const { health } = deps;
  const [eventStore, readModels, blobs, idempotency, writes] = await Promise.all([
    probe(() => deps.eventStore.ping()),
    probe(() => deps.readModels.ping()),
    probe(() => deps.blobs.ping()),
    probe(() => deps.idempotency.ping()),
    health.writeProbe ? probe(health.writeProbe) : Promise.resolve<Check>({ status: 'pass' }),
  ]);
  const refused = health.storeFailures.recent();
  const storage: Check & { lastRefusedWrite?: { code: string; at: string } } =
    writes.status === 'fail'
      ? writes
      : refused
        ? {
            status: 'fail',
            error: refused.message,
            lastRefusedWrite: { code: refused.code, at: refused.at },
          }
        : { status: 'pass' };
  const listed = health.consumers();
  const head =
    eventStore.status === 'pass' && listed.some((consumer) => consumer.checkpoint !== undefined)
      ? await within(deps.eventStore.headPosition(), checkTimeoutMs).catch(() => null)
      : null;
  const consumers = listed.map((consumer) => ({
    ...consumer,
    ...(consumer.checkpoint !== undefined && head !== null
      ? { lag: Math.max(0, head - consumer.checkpoint) }
      : {}),
  }));
  const stopped = consumers.filter((consumer) => !consumerOk(consumer));
  const checks = {
    draining: health.draining()
      ? ({ status: 'fail', error: 'the process is shutting down' } as Check)
      : ({ status: 'pass' } as Check),
    eventStore,
    readModels,
    blobs,
    idempotency,
    storage,
    consumers: (stopped.length > 0
      ? {
          status: 'fail',
          error: stopped.map((consumer) => `${consumer.name} is ${consumer.state}`).join('; '),
        }
      : { status: 'pass' }) as Check,
    issuer: health.issuer?.() ?? { status: 'pass' },
    capabilities: unavailableCheck(health.unavailable?.() ?? []),
  };
  const failed = Object.entries(checks).filter(([, check]) => check.status === 'fail');
  return { ready: failed.length === 0, failed, checks, consumers };
};

type Readiness = Awaited<ReturnType<typeof readiness>>;

/** Compared as digests, so that neither the time nor a length check says how much of the key matched. */
const sameKey = (given: string, key: string): boolean =>
  timingSafeEqual(createHash('sha256').update(given).digest(), createHash('sha256').update(key).digest());

/** Whether the request carries the platform key, as `X-API-Key` or as a bearer token. */
export const sentPlatformKey = (
  headers: { 'x-api-key'?: string | string[]; authorization?: string },
  platformKey: string | undefined,
): boolean => {
  if (platformKey === undefined) return false;
  const apiKey = headers['x-api-key'];
  if (typeof apiKey === 'string') return sameKey(apiKey, platformKey);
  const bearer = /^Bearer (.+)$/i.exec(headers.authorization ?? '')?.[1];
  return bearer !== undefined && sameKey(bearer, platformKey);
};

/**
 * The readiness answer: its status and body, with the checks and consumers only when `detailed` (the
 * platform key, or the METRICS=port listener). Not ready, it carries the members of a problem document.
 */
export const readinessAnswer = (
  result: Readiness,
  detailed: boolean,
): { status: 200 | 503; body: Record<string, unknown> } => {
  const details = detailed ? { checks: result.checks, consumers: result.consumers } : {};
  if (result.ready) return { status: 200, body: { status: 'ready', ...details } };
  return {
    status: 503,
    body: {
      status: 'not-ready',
      type: '/problems/not-ready',
      title: 'The service should not get traffic now',
      ...(detailed ? { detail: failureDetail(result) } : {}),
      ...details,
    },
  };
};

const failureDetail = (result: Readiness): string =>
  result.failed.map(([name, check]) => `${name}: ${check.error ?? 'failed'}`).join('; ');

/** The routes; mounted by createApp without authentication, rate limit or idempotency. */
export const healthApi = (deps: HealthDeps): Router => {
  const router = new Router();
  router.get('/health/live', (ctx) => {
    ctx.set('Cache-Control', 'no-store');
    ctx.body = { status: 'alive' };
  });
  const ready = async (ctx: Context) => {
    const result = await readiness(deps);
    ctx.set('Cache-Control', 'no-store');
    // The operator reads why in the log; an anonymous caller learns only that it should not send traffic.
    if (!result.ready && !deps.health.draining()) {
      ctx.state.logger.warn({ detail: failureDetail(result) }, 'not ready');
    }
    const answer = readinessAnswer(result, sentPlatformKey(ctx.headers, deps.health.platformKey));
    ctx.status = answer.status;
    if (answer.status === 503) ctx.set('Retry-After', '5');
    ctx.body = answer.body;
  };
  router.get('/health/ready', ready);
  router.get('/health', ready);
  return router;
};
