import type { Options, Result } from 'autocannon';
import {
  cannon,
  figures,
  json,
  observationBody,
  startServer,
  waitProjected,
  type HttpFigures,
} from './http.js';
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { rotateKeys } from '../src/auth/signing-keys.js';
import { removeTempDir, stopChild, tempDir, type Child } from './processes.js';
import { analyzeDatabase } from './postgres-db.js';
import { benchService, provision } from './provision.js';
import { latencyFigures, type LatencyFigures } from './stats.js';

/**
 * The `scaleout` phase (issue 13): the processes of one machine on one DATA_DIR, as docs/operations.md lays
 * them out: one `ROLE=worker` (projections, webhooks, CV) and two `ROLE=api` processes, A and B.
 * - Create, then list of 50, with autocannon at `connections` connections on A alone; then the same total
 *   spread over A and B (two autocannon instances at once, half the connections each; req/s summed, the
 *   larger p99). The lists run after all creations, so both read the same data. Target: 2 ≥ 1.4 × 1.
 * - Read-your-writes across processes: `checks` creations, alternately on A and B, each followed by a list on
 *   the other process with `minPosition` set to the creation's X-Position and observedFrom/observedTo set to
 *   the creation's unique observedAt. A 200 without the new observation is a violation (target 0); a 503
 *   (the projection did not catch up within CONSISTENCY_TIMEOUT) is counted apart, as is anything else.
 * With `databaseUrl`, the three processes share that PostgreSQL database instead, each with a DATA_DIR of
 * its own, as on several machines: nothing shared but the database and the secrets, set explicitly.
 */

export interface ScaleoutHttp {
  requestsPerSecond: number;
  p50Ms: number;
  p99Ms: number;
  errors: number;
  timeouts: number;
  non2xx: number;
  /** req/s of each API process's load generator. */
  perProcess: number[];
}

export interface ScaleoutResults {
  connections: number;
  durationS: number;
  one: { create: ScaleoutHttp; list: ScaleoutHttp };
  two: { create: ScaleoutHttp; list: ScaleoutHttp };
  /** Two API processes ÷ one. */
  createRatio: number;
  listRatio: number;
  readYourWrites: {
    checks: number;
    violations: number;
    unavailable: number;
    otherFailures: number;
    /** The list with minPosition on the other process, from request to response. */
    listLatency: LatencyFigures;
  };
}

const connections = 50;
/** Creations and lists of the read-your-writes check that run at once. */
const checkConcurrency = 8;

/** Runs one autocannon per target at the same time, the connections split between them, and sums them. */
const spread = async (targets: Options[], durationS: number): Promise<ScaleoutHttp> => {
  const each = Math.floor(connections / targets.length);
  const results: Result[] = await Promise.all(
    targets.map((options) => cannon({ ...options, connections: each, duration: durationS })),
  );
  const parts: HttpFigures[] = results.map(figures);
  const sum = (pick: (f: HttpFigures) => number) => parts.reduce((n, f) => n + pick(f), 0);
  return {
    requestsPerSecond: sum((f) => f.requestsPerSecond),
    p50Ms: Math.max(...parts.map((f) => f.p50Ms)),
    p99Ms: Math.max(...parts.map((f) => f.p99Ms)),
    errors: sum((f) => f.errors),
    timeouts: sum((f) => f.timeouts),
    non2xx: sum((f) => f.non2xx),
    perProcess: parts.map((f) => f.requestsPerSecond),
  };
};

const measureSpread = async (targets: Options[], warmupS: number, durationS: number) => {
  if (warmupS > 0) await spread(targets, warmupS);
  return spread(targets, durationS);
};

/** One creation on `writer`, then the list on `reader` that must include it. */
const readYourWrite = async (
  writer: string,
  reader: string,
  headers: Record<string, string>,
  observedAt: string,
): Promise<{ outcome: 'seen' | 'violation' | 'unavailable' | 'other'; listMs: number }> => {
  const created = await fetch(writer, {
    method: 'POST',
    headers: { ...headers, ...json },
    body: JSON.stringify({ observedAt, notes: 'read-your-writes check' }),
  });
  const body = (await created.json()) as { id?: string };
  const position = created.headers.get('x-position');
  if (created.status !== 201 || !position || !body.id) return { outcome: 'other', listMs: 0 };
  const query = new URLSearchParams({
    minPosition: position,
    observedFrom: observedAt,
    observedTo: observedAt,
  });
  const started = performance.now();
  const listed = await fetch(`${reader}?${query.toString()}`, { headers });
  const text = await listed.text();
  const listMs = performance.now() - started;
  if (listed.status === 503) return { outcome: 'unavailable', listMs };
  if (listed.status !== 200) return { outcome: 'other', listMs };
  const ids = (JSON.parse(text) as { data: { id: string }[] }).data.map((o) => o.id);
  return { outcome: ids.includes(body.id) ? 'seen' : 'violation', listMs };
};

const checkReadYourWrites = async (
  urls: [string, string],
  headers: Record<string, string>,
  checks: number,
): Promise<ScaleoutResults['readYourWrites']> => {
  const counts = { seen: 0, violation: 0, unavailable: 0, other: 0 };
  const listMs: number[] = [];
  // A distinct observedAt per check, in a year no other creation of the run uses.
  const base = Date.parse('2031-01-01T00:00:00.000Z');
  let next = 0;
  const loop = async () => {
    while (next < checks) {
      const n = (next += 1);
      const [writer, reader] = n % 2 === 0 ? urls : ([urls[1], urls[0]] as const);
      const result = await readYourWrite(writer, reader, headers, new Date(base + n * 1000).toISOString());
      counts[result.outcome] += 1;
      if (result.outcome !== 'other') listMs.push(result.listMs);
    }
  };
  await Promise.all(Array.from({ length: checkConcurrency }, loop));
  return {
    checks,
    violations: counts.violation,
    unavailable: counts.unavailable,
    otherFailures: counts.other,
    listLatency: latencyFigures(listMs.map((ms) => Math.round(ms * 10) / 10)),
  };
};

/**
 * What the processes of a PostgreSQL scale-out share: the database, the secrets and the signing keyring
 * (a process whose differ exits 2 at start: docs/operations.md#shared-secrets), not a DATA_DIR.
 */
const postgresEnv = (databaseUrl: string, dataDir: string): Record<string, string> => {
  const secret = () => randomBytes(32).toString('base64url');
  const keyring = join(dataDir, 'shared-signing-keys.json');
  rotateKeys(keyring);
  return {
    DATABASE_URL: databaseUrl,
    CURSOR_SECRET: secret(),
    WEBHOOK_SECRET_KEY: secret(),
    IDEMPOTENCY_SECRET_KEY: secret(),
    SIGNING_KEYS_FILE: keyring,
  };
};

export const runScaleout = async ({
  durationS,
  warmupS,
  checks,
  databaseUrl,
}: {
  durationS: number;
  warmupS: number;
  checks: number;
  databaseUrl?: string;
}): Promise<ScaleoutResults> => {
  const { dataDir, adminKey, env } = benchService('scaleout');
  const shared = databaseUrl ? { ...env, ...postgresEnv(databaseUrl, dataDir) } : env;
  const dirs = [dataDir];
  const started: { child: Child; base: string }[] = [];
  try {
    // One after another: the worker takes the lease first, and the development secrets are generated once.
    for (const [role, name] of [
      ['worker', 'scaleout-worker'],
      ['api', 'scaleout-api-a'],
      ['api', 'scaleout-api-b'],
    ] as const) {
      const ownDir = databaseUrl && role === 'api' ? tempDir(name) : null;
      if (ownDir) dirs.push(ownDir);
      // The API processes serve the one address a load balancer would: on their own ports, PUBLIC_URL
      // unset, each would issue tokens the other refuses, and the second would not start.
      const childEnv = {
        ...shared,
        ROLE: role,
        PUBLIC_URL: 'http://127.0.0.1:3000',
        ...(ownDir ? { DATA_DIR: ownDir } : {}),
      };
      started.push(await startServer('src/main.ts', databaseUrl ? `${name}-postgres` : name, childEnv));
    }
    const [a, b] = [started[1]!, started[2]!];
    const principal = await provision(a.base, adminKey);
    const path = `/v1/tenants/${principal.tenantId}/observations`;
    const urls: [string, string] = [`${a.base}${path}`, `${b.base}${path}`];
    await waitProjected(urls[0], principal.headers);
    await waitProjected(urls[1], principal.headers);

    const create = (url: string): Options => ({
      url,
      method: 'POST',
      headers: { ...principal.headers, ...json },
      body: observationBody,
    });
    const list = (url: string): Options => ({ url: `${url}?limit=50`, headers: principal.headers });
    const createOne = await measureSpread([create(urls[0])], warmupS, durationS);
    const createTwo = await measureSpread(urls.map(create), warmupS, durationS);
    await waitProjected(urls[0], principal.headers);
    if (databaseUrl) await analyzeDatabase(databaseUrl);
    const listOne = await measureSpread([list(urls[0])], warmupS, durationS);
    const listTwo = await measureSpread(urls.map(list), warmupS, durationS);
    const readYourWrites = await checkReadYourWrites(urls, principal.headers, checks);
    return {
      connections,
      durationS,
      one: { create: createOne, list: listOne },
      two: { create: createTwo, list: listTwo },
      createRatio: createTwo.requestsPerSecond / createOne.requestsPerSecond,
      listRatio: listTwo.requestsPerSecond / listOne.requestsPerSecond,
      readYourWrites,
    };
  } catch (error) {
    const outputs = started.map((s, i) => `--- process ${i}:\n${s.child.output()}`).join('\n');
    throw new Error(`${(error as Error).message}\n${outputs}`, { cause: error });
  } finally {
    for (const server of started.reverse()) await stopChild(server.child);
    for (const dir of dirs) removeTempDir(dir);
  }
};
