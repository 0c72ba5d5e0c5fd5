import autocannon, { type Options, type Result } from 'autocannon';
import { randomBytes } from 'node:crypto';
import { cpuMsOf } from './cpu.js';
import { analyzeDatabase } from './postgres-db.js';
import { benchService, provision } from './provision.js';
import {
  cpuProfileArgs,
  freePort,
  startChild,
  stopChild,
  tempDir,
  removeTempDir,
  waitHealthy,
  type Child,
} from './processes.js';

/**
 * Phase 1: the service's create and list endpoints under autocannon, each against the same endpoint of the
 * CRUD peer (bench/crud-peer.ts: Koa, SQLite, the same validation, key check, durability and list query,
 * without event sourcing); a bare Koa echo server is the ceiling, shown without a target.
 */

export interface HttpFigures {
  requestsPerSecond: number;
  completed: number;
  p50Ms: number;
  p99Ms: number;
  maxMs: number;
  errors: number;
  timeouts: number;
  non2xx: number;
  durationS: number;
  /** The server process's CPU (user + system, every thread) per completed request; null when not measured. */
  cpuMsPerRequest: number | null;
}

export interface HttpResults {
  connections: number;
  durationS: number;
  echo: HttpFigures;
  create: HttpFigures;
  list: HttpFigures;
  observationsBeforeList: number;
  /** The CRUD peer's insert and list: the baselines of create and list. */
  peerCreate: HttpFigures;
  peerList: HttpFigures;
  peerObservationsBeforeList: number;
  tenantId: string;
  /** Whether the load carried an API key (a service with authentication). */
  authenticated: boolean;
}

export const connections = 50;

export const cannon = (options: Options): Promise<Result> =>
  new Promise((resolve, reject) => {
    autocannon({ connections, timeout: 10, ...options }, (error, result) =>
      error ? reject(error) : resolve(result),
    );
  });

export const figures = (result: Result, cpuMs: number | null = null): HttpFigures => ({
  requestsPerSecond: result.requests.average,
  completed: result.requests.total ?? 0,
  p50Ms: result.latency.p50,
  p99Ms: result.latency.p99,
  maxMs: result.latency.max,
  errors: result.errors,
  timeouts: result.timeouts,
  non2xx: result.non2xx,
  durationS: result.duration,
  cpuMsPerRequest: cpuMs === null || !result.requests.total ? null : cpuMs / result.requests.total,
});

export const observationBody = JSON.stringify({
  observedAt: '2025-05-01T19:42:00.000Z',
  position: { lat: 51.7532, lon: -1.2589 },
  notes: 'Crossed the lane by the old barn, heading towards the copse',
  attributes: { species: 'fox', count: 2 },
});
export const json = { 'content-type': 'application/json' };

/**
 * Calls one tenant's routes with its key: `call('/observations', init)` answers the parsed JSON body, and
 * throws with the status and body for anything but 2xx.
 */
export const tenantCaller =
  (tenant: string, key: string) =>
  async (path: string, init: RequestInit = {}): Promise<Record<string, unknown>> => {
    const response = await fetch(`${tenant}${path}`, {
      ...init,
      headers: { 'x-api-key': key, ...init.headers },
    });
    const text = await response.text();
    if (response.status >= 300) throw new Error(`${path} answered ${response.status}: ${text}`);
    return JSON.parse(text) as Record<string, unknown>;
  };

/**
 * A warm-up (JIT, SQLite caches) that is not measured, then the measured run, with the CPU the server
 * process `pid` spent on the measured run (ms; null without a pid or /proc).
 */
const warmedRun = async (options: Options, warmupS: number, durationS: number, pid?: number) => {
  const warmup = warmupS > 0 ? await cannon({ ...options, duration: warmupS }) : null;
  const before = pid === undefined ? null : cpuMsOf(pid);
  const result = await cannon({ ...options, duration: durationS });
  const after = pid === undefined ? null : cpuMsOf(pid);
  return { warmup, result, cpuMs: before === null || after === null ? null : after - before };
};

/** A warm-up (JIT, SQLite caches) that is not measured, then the measured run. */
export const measure = async (options: Options, warmupS: number, durationS: number): Promise<Result> =>
  (await warmedRun(options, warmupS, durationS)).result;

/** measure()'s figures, with the CPU per request of the server process `pid`. */
const measuredFigures = async (options: Options, warmupS: number, durationS: number, pid?: number) => {
  const { result, cpuMs } = await warmedRun(options, warmupS, durationS, pid);
  return figures(result, cpuMs);
};

export const startServer = async (
  file: string,
  name: string,
  env: Record<string, string>,
): Promise<{ child: Child; base: string }> => {
  const port = await freePort();
  const child = startChild(file, {
    env: { ...env, PORT: String(port), HOST: '127.0.0.1' },
    nodeArgs: cpuProfileArgs(name),
  });
  const base = `http://127.0.0.1:${port}`;
  await waitHealthy(`${base}/health`, child);
  return { child, base };
};

/** Waits until the list's projection includes everything written so far (it runs behind the writes). */
export const waitProjected = async (url: string, headers: Record<string, string>): Promise<void> => {
  const created = await fetch(url, {
    method: 'POST',
    headers: { ...headers, ...json },
    body: observationBody,
  });
  if (created.status !== 201)
    throw new Error(`POST ${url} answered ${created.status}: ${await created.text()}`);
  const position = created.headers.get('x-position');
  for (let attempt = 0; attempt < 60; attempt += 1) {
    const response = await fetch(`${url}?limit=1&minPosition=${position}`, { headers });
    const text = await response.text();
    if (response.ok) return;
    if (response.status !== 503) throw new Error(`GET ${url} answered ${response.status}: ${text}`);
  }
  throw new Error(`the observations projection did not reach position ${position}`);
};

/**
 * Creates under load (warm-up, then measured), then tops the store up to at least 5,000 observations, so
 * that the list that follows pages through a store of some size. Returns the measured run and the count.
 */
const createLoad = async (createOptions: Options, warmupS: number, durationS: number, pid?: number) => {
  const { warmup, result, cpuMs } = await warmedRun(createOptions, warmupS, durationS, pid);
  const create = figures(result, cpuMs);
  let observations = (warmup?.['2xx'] ?? 0) + result['2xx'];
  if (observations < 5000)
    observations += (await cannon({ ...createOptions, amount: Math.max(connections, 5000 - observations) }))[
      '2xx'
    ];
  return { create, observations };
};

/** The CRUD peer on a fresh directory: its create, then its list of 50, as the service's are measured. */
const runPeer = async (warmupS: number, durationS: number) => {
  const dataDir = tempDir('crud-peer');
  const tenantId = 't_peer';
  const apiKey = randomBytes(32).toString('base64url');
  const peer = await startServer('bench/crud-peer.ts', 'crud-peer', {
    DATA_DIR: dataDir,
    PEER_TENANT: tenantId,
    PEER_API_KEY: apiKey,
    CURSOR_SECRET: randomBytes(32).toString('base64url'),
  });
  try {
    const url = `${peer.base}/v1/tenants/${tenantId}/observations`;
    const headers = { 'x-api-key': apiKey };
    const { create, observations } = await createLoad(
      { url, method: 'POST', headers: { ...headers, ...json }, body: observationBody },
      warmupS,
      durationS,
      peer.child.process.pid,
    );
    const list = await measuredFigures(
      { url: `${url}?limit=50`, headers },
      warmupS,
      durationS,
      peer.child.process.pid,
    );
    return { create, list, observations };
  } catch (error) {
    throw new Error(`${(error as Error).message}\nCRUD peer output:\n${peer.child.output()}`, {
      cause: error,
    });
  } finally {
    await stopChild(peer.child);
    removeTempDir(dataDir);
  }
};

/** The echo server's and the CRUD peer's figures: measured once per run, the baselines of every backend. */
export type HttpBaselines = Pick<
  HttpResults,
  'echo' | 'peerCreate' | 'peerList' | 'peerObservationsBeforeList'
>;

const measureBaselines = async (warmupS: number, durationS: number): Promise<HttpBaselines> => {
  const echoServer = await startServer('bench/echo-server.ts', 'echo', {});
  let echo: Result;
  try {
    echo = await measure(
      { url: `${echoServer.base}/echo`, method: 'POST', headers: json, body: observationBody },
      warmupS,
      durationS,
    );
  } finally {
    await stopChild(echoServer.child);
  }
  const peer = await runPeer(warmupS, durationS);
  return {
    echo: figures(echo),
    peerCreate: peer.create,
    peerList: peer.list,
    peerObservationsBeforeList: peer.observations,
  };
};

/**
 * The service on its embedded stores, or with `databaseUrl` on PostgreSQL (every store in that database),
 * against the echo server and the CRUD peer: `baselines` when a run measured them already, else measured
 * here first.
 */
export const runHttp = async ({
  durationS,
  warmupS,
  databaseUrl,
  baselines,
}: {
  durationS: number;
  warmupS: number;
  databaseUrl?: string;
  baselines?: HttpBaselines;
}): Promise<HttpResults> => {
  const baseline = baselines ?? (await measureBaselines(warmupS, durationS));
  const { dataDir, adminKey, env } = benchService('service');
  const service = await startServer(
    'src/main.ts',
    databaseUrl ? 'service-postgres' : 'service',
    databaseUrl ? { ...env, DATABASE_URL: databaseUrl } : env,
  );
  try {
    const principal = await provision(service.base, adminKey);
    const url = `${service.base}/v1/tenants/${principal.tenantId}/observations`;
    // Fails fast on a 401/403/404 instead of measuring how quickly the service refuses.
    await waitProjected(url, principal.headers);
    const { create, observations } = await createLoad(
      { url, method: 'POST', headers: { ...principal.headers, ...json }, body: observationBody },
      warmupS,
      durationS,
      service.child.process.pid,
    );
    await waitProjected(url, principal.headers);
    if (databaseUrl) await analyzeDatabase(databaseUrl);

    const list = await measuredFigures(
      { url: `${url}?limit=50`, headers: principal.headers },
      warmupS,
      durationS,
      service.child.process.pid,
    );
    return {
      ...baseline,
      connections,
      durationS,
      create,
      list,
      observationsBeforeList: observations,
      tenantId: principal.tenantId,
      authenticated: Object.keys(principal.headers).length > 0,
    };
  } catch (error) {
    throw new Error(`${(error as Error).message}\nservice output:\n${service.child.output()}`, {
      cause: error,
    });
  } finally {
    await stopChild(service.child);
    removeTempDir(dataDir);
  }
};
