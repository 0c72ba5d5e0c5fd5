import Database from 'better-sqlite3';
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { observationsProjection, observationsQuery } from '../projections/observations.js';
import { openSqliteEventStore } from '../src/eventstore/sqlite.js';
import { cursorCodec } from '../src/http/cursor.js';
import { parseBbox } from '../src/observations/codecs.js';
import type { ListQuery } from '../src/readmodels/port.js';
import { openSqliteReadModels } from '../src/readmodels/sqlite.js';
import { observationStream } from './events.js';
import { figures, json, measure, observationBody, startServer, type HttpFigures } from './http.js';
import { removeTempDir, stopChild, type Child } from './processes.js';
import { benchService, provision, type BenchPrincipal } from './provision.js';

/**
 * The `growth` phase (issue 13): what a list and a create cost as one tenant's data grows.
 * - One DATA_DIR; the service (src/main.ts, ROLE=all) is stopped while `ObservationRecorded` events of one
 *   tenant (bench/events.ts: one a second of observedAt, positions spread over 1° × 0.78°) are appended
 *   straight to its event store, 500 appends in flight, up to each size of `sizes` in turn; on restart the
 *   projection catches up (timed, until a list with `minPosition` = the store's head answers 200).
 * - At each size, with autocannon at `listConnections` connections (60 s time-out): the first page of 50
 *   (newest observedAt first); a page of 50 half-way down the list (see cursorHalfWay);
 *   a bbox + time-range filter (the same hour of observations and the same box at every size, so the same
 *   matches); and a sort on createdAt. The `EXPLAIN QUERY PLAN` of each list's SQL, as the read model store
 *   prepares it (captured from better-sqlite3 in this process, against the same file), is kept beside them.
 * - Creates at 50 connections in a second tenant: once on the store as provisioned (empty), once at the end
 *   on the store holding the largest size. Targets: each list's p99 at the largest size within 2× of the
 *   smallest; create at the largest within 20 % of empty.
 */

export interface GrowthList {
  name: string;
  /** The query string after /observations. */
  query: string;
  requestsPerSecond: number;
  /** Requests answered within the measured seconds. */
  completed: number;
  /**
   * With none completed, autocannon reports 0: then p50 and p99 are the measured seconds, a lower bound
   * (every request took longer), and `lowerBound` says so.
   */
  p50Ms: number;
  p99Ms: number;
  lowerBound: boolean;
  failures: number;
}

export interface QueryPlan {
  name: string;
  sql: string;
  plan: string[];
}

export interface GrowthSize {
  observations: number;
  /** The event store's head once seeded. */
  events: number;
  seedSeconds: number;
  catchUpSeconds: number;
  lists: GrowthList[];
  plans: QueryPlan[];
}

export interface GrowthResults {
  listConnections: number;
  durationS: number;
  sizes: GrowthSize[];
  createEmpty: HttpFigures;
  createFull: HttpFigures;
  /** Events in the store when createFull ran. */
  createFullStoreEvents: number;
  /** createFull ÷ createEmpty req/s. */
  createRatio: number;
  /** Each list's p99 at the largest size ÷ at the smallest. */
  listRatios: { name: string; ratio: number }[];
}

const listConnections = 10;
const base = Date.parse('2025-04-01T06:00:00.000Z');
/** An hour of observations (bench/events.ts: observation i is observed at base + i s − 60 s) in every size. */
const hour = { from: new Date(base + 3600_000).toISOString(), to: new Date(base + 7200_000).toISOString() };
const bbox = '-1.3,51.2,-1.1,51.3';

const listVariants = [
  { name: 'first page', params: {} },
  { name: 'deep page (half-way)', params: {} },
  { name: 'bbox + time range', params: { bbox, observedFrom: hour.from, observedTo: hour.to } },
  { name: 'sort=createdAt', params: { sort: 'createdAt' } },
] as const satisfies readonly { name: string; params: Record<string, string> }[];

/** Appends observation streams `from`…`to - 1` of the tenant, 500 appends in flight (they share commits). */
const seedObservations = async (eventsFile: string, tenantId: string, from: number, to: number) => {
  const store = openSqliteEventStore(eventsFile);
  try {
    const started = performance.now();
    for (let i = from; i < to;) {
      const appends: Promise<unknown>[] = [];
      for (; appends.length < 500 && i < to; i += 1) {
        const { stream, events } = observationStream(i, 1, tenantId);
        appends.push(store.appendToStream(stream, events, 'no_stream'));
      }
      await Promise.all(appends);
    }
    return { seconds: (performance.now() - started) / 1000, head: await store.headPosition() };
  } finally {
    await store.close();
  }
};

const getJson = async (url: string, headers: Record<string, string>) => {
  const response = await fetch(url, { headers });
  return { status: response.status, text: await response.text() };
};

/** Polls a list with minPosition until the projection has caught up with `head`. */
const waitCaughtUp = async (url: string, headers: Record<string, string>, head: number) => {
  const deadline = Date.now() + 30 * 60_000;
  while (Date.now() < deadline) {
    const { status, text } = await getJson(`${url}?limit=1&minPosition=${head}`, headers);
    if (status === 200) return;
    if (status !== 503) throw new Error(`GET ${url} answered ${status}: ${text}`);
  }
  throw new Error(`the observations projection did not reach ${head} within 30 minutes`);
};

/**
 * Waits until every consumer of the service has caught up too (the webhook projector, the CV worker and
 * the other projections read the seeded events as well): GET /health's lags are all 0, or no longer move.
 */
const waitConsumersIdle = async (base: string) => {
  const deadline = Date.now() + 30 * 60_000;
  let last = '';
  let unchanged = 0;
  while (Date.now() < deadline && unchanged < 4) {
    const health = (await (await fetch(`${base}/health`)).json()) as { consumers?: { lag?: number }[] };
    const lags = (health.consumers ?? []).map((c) => c.lag ?? 0);
    if (lags.every((lag) => lag === 0)) return;
    const now = JSON.stringify(lags);
    unchanged = now === last ? unchanged + 1 : 0;
    last = now;
    await new Promise((resolve) => setTimeout(resolve, 500));
  }
};

/** CPU seconds the process has used (Linux /proc); null where that cannot be read. */
const cpuSeconds = (pid: number): number | null => {
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
    return (Number(fields[11]) + Number(fields[12])) / 100;
  } catch {
    return null;
  }
};

/**
 * Consumers without a lag to report (the consumer groups settling the seeded events) may still be busy:
 * waits until the service uses under 5 % of a core for two seconds in a row (at most 10 minutes).
 */
const waitQuiet = async (pid: number) => {
  const deadline = Date.now() + 10 * 60_000;
  for (let quiet = 0; quiet < 2 && Date.now() < deadline;) {
    const before = cpuSeconds(pid);
    await new Promise((resolve) => setTimeout(resolve, 1000));
    const after = cpuSeconds(pid);
    if (before === null || after === null) return;
    quiet = after - before < 0.05 ? quiet + 1 : 0;
  }
};

/**
 * After a load of slow requests, the service still works off those autocannon left in flight: waits until
 * it answers a liveness probe promptly again, so that they do not weigh on the next measurement.
 */
const settle = async (base: string) => {
  const deadline = Date.now() + 5 * 60_000;
  while (Date.now() < deadline) {
    const started = performance.now();
    await (await fetch(`${base}/health/live`)).text();
    if (performance.now() - started < 50) return;
  }
};

/**
 * The cursor of the page half-way down the default list (newest observedAt first), made as the service makes
 * it: the (observedAt, id) of the last row before it, read from the read model, signed with the service's
 * CURSOR_SECRET for the same list key as src/http/paging.ts's listPage. Paging there 200 at a time would do
 * as well, but each page's query costs as much as its depth (see docs/benchmarks.md), so at 1M that takes
 * many minutes. The cursor is checked with one request, so that a change of the key fails here, loudly.
 */
const cursorHalfWay = async (
  readModelsFile: string,
  tenantId: string,
  secret: string,
  observations: number,
  check: (cursor: string) => Promise<{ status: number; text: string }>,
) => {
  const db = new Database(readModelsFile, { readonly: true });
  let row: { id: string; value: string } | undefined;
  try {
    const physical = db
      .prepare('SELECT physical FROM collections WHERE name = ?')
      .pluck()
      .get(observationsProjection.collection.name) as string | undefined;
    row = db
      .prepare(
        `SELECT id, f_observedAt AS value FROM rm_${physical ?? observationsProjection.collection.name}
         WHERE tenant_id = ? AND doc IS NOT NULL ORDER BY f_observedAt DESC, id DESC LIMIT 1 OFFSET ?`,
      )
      .get(tenantId, Math.floor(observations / 2) - 1) as typeof row;
  } finally {
    db.close();
  }
  if (!row) throw new Error(`the read model holds fewer than ${observations / 2} observations`);
  const query = observationsQuery(tenantId, {});
  const key = JSON.stringify([
    observationsProjection.collection.name,
    query.tenantId,
    query.filters,
    query.sort,
  ]);
  const cursor = cursorCodec(secret).encode({ value: row.value, id: row.id }, key);
  const answer = await check(cursor);
  if (answer.status !== 200)
    throw new Error(`the half-way cursor was answered ${answer.status}: ${answer.text}`);
  return cursor;
};

/**
 * The SQL and parameters the read model store runs for each list, captured by wrapping better-sqlite3's
 * prepare while the store lists, then `EXPLAIN QUERY PLAN` of each on a connection of its own.
 */
const queryPlans = async (readModelsFile: string, tenantId: string): Promise<QueryPlan[]> => {
  const captured: { sql: string; params: unknown[] }[] = [];
  // eslint-disable-next-line @typescript-eslint/unbound-method -- put back below, and called with its `this`
  const prepare = Database.prototype.prepare;
  Database.prototype.prepare = function (this: Database.Database, sql: string) {
    const statement = prepare.call(this, sql);
    if (/^\s*SELECT doc AS json/.test(sql)) {
      const all = statement.all.bind(statement) as (...params: unknown[]) => unknown[];
      statement.all = (...params: unknown[]) => {
        captured.push({ sql, params });
        return all(...params);
      };
    }
    return statement;
  } as typeof prepare;
  const readModels = openSqliteReadModels(readModelsFile);
  const plans: QueryPlan[] = [];
  try {
    await readModels.ensureCollection(observationsProjection.collection);
    for (const variant of listVariants) {
      const { bbox: box, ...rest }: Record<string, string | undefined> = variant.params;
      const parsed = box === undefined ? undefined : parseBbox(box);
      const params = { ...rest, ...(parsed ? { bbox: parsed } : {}) };
      const query: ListQuery = { ...observationsQuery(tenantId, params), limit: 51 };
      // The plan does not depend on the cursor's values, only on there being one.
      if (variant.name.startsWith('deep')) query.after = { value: hour.to, id: 'o_' };
      captured.length = 0;
      await readModels.listJson(observationsProjection.collection.name, query);
      const [run] = captured;
      if (!run) throw new Error(`no list query was captured for ${variant.name}`);
      plans.push({ name: variant.name, sql: run.sql.replace(/\s+/g, ' ').trim(), plan: [] });
      const explain = new Database(readModelsFile, { readonly: true });
      try {
        const rows = explain.prepare(`EXPLAIN QUERY PLAN ${run.sql}`).all(...run.params) as {
          id: number;
          parent: number;
          detail: string;
        }[];
        const depth = new Map<number, number>([[0, 0]]);
        for (const row of rows) {
          const level = (depth.get(row.parent) ?? 0) + 1;
          depth.set(row.id, level);
          plans.at(-1)!.plan.push(`${'  '.repeat(level - 1)}${row.detail}`);
        }
      } finally {
        explain.close();
      }
    }
  } finally {
    Database.prototype.prepare = prepare;
    await readModels.close();
  }
  return plans;
};

const measureLists = async (
  base: string,
  url: string,
  headers: Record<string, string>,
  deepCursor: string,
  warmupS: number,
  durationS: number,
): Promise<GrowthList[]> => {
  const lists: GrowthList[] = [];
  for (const variant of listVariants) {
    const query = new URLSearchParams({ limit: '50', ...variant.params });
    if (variant.name.startsWith('deep')) query.set('cursor', deepCursor);
    const f = figures(
      await measure(
        { url: `${url}?${query.toString()}`, headers, connections: listConnections, timeout: 60 },
        warmupS,
        durationS,
      ),
    );
    await settle(base);
    lists.push({
      name: variant.name,
      query: variant.name.startsWith('deep')
        ? 'limit=50&cursor=<half-way>'
        : decodeURIComponent(query.toString()),
      requestsPerSecond: f.requestsPerSecond,
      completed: f.completed,
      p50Ms: f.completed > 0 ? f.p50Ms : durationS * 1000,
      p99Ms: f.completed > 0 ? f.p99Ms : durationS * 1000,
      lowerBound: f.completed === 0,
      failures: f.errors + f.timeouts + f.non2xx,
    });
  }
  return lists;
};

export const runGrowth = async ({
  sizes,
  durationS,
  warmupS,
}: {
  sizes: readonly number[];
  durationS: number;
  warmupS: number;
}): Promise<GrowthResults> => {
  const { dataDir, adminKey, env: base } = benchService('growth');
  const env = {
    ...base,
    CURSOR_SECRET: randomBytes(32).toString('base64url'),
  };
  /** The service now running, if any: it is stopped while events are seeded. */
  const running: { service: { child: Child; base: string } | null } = { service: null };
  const start = async () => (running.service = await startServer('src/main.ts', 'growth', env));
  const stop = async () => {
    if (running.service) await stopChild(running.service.child);
    running.service = null;
  };
  try {
    const started = await start();
    const lister: BenchPrincipal = await provision(started.base, adminKey);
    const creator: BenchPrincipal = await provision(started.base, adminKey);
    const create = async () => {
      const url = `${running.service!.base}/v1/tenants/${creator.tenantId}/observations`;
      const options = {
        url,
        method: 'POST',
        headers: { ...creator.headers, ...json },
        body: observationBody,
      };
      await settle(running.service!.base);
      return figures(await measure(options, warmupS, durationS));
    };
    const createEmpty = await create();

    const results: GrowthSize[] = [];
    let seeded = 0;
    for (const size of [...sizes].sort((a, b) => a - b)) {
      await stop();
      const seed = await seedObservations(join(dataDir, 'events.db'), lister.tenantId, seeded, size);
      seeded = size;
      const { base } = await start();
      const url = `${base}/v1/tenants/${lister.tenantId}/observations`;
      const catchUpStarted = performance.now();
      await waitCaughtUp(url, lister.headers, seed.head);
      const catchUpSeconds = (performance.now() - catchUpStarted) / 1000;
      await waitConsumersIdle(base);
      await waitQuiet(running.service!.child.process.pid!);
      const cursor = await cursorHalfWay(
        join(dataDir, 'readmodels.db'),
        lister.tenantId,
        env.CURSOR_SECRET,
        size,
        (c) => getJson(`${url}?limit=50&cursor=${encodeURIComponent(c)}`, lister.headers),
      );
      results.push({
        observations: size,
        events: seed.head,
        seedSeconds: seed.seconds,
        catchUpSeconds,
        lists: await measureLists(base, url, lister.headers, cursor, warmupS, durationS),
        plans: await queryPlans(join(dataDir, 'readmodels.db'), lister.tenantId),
      });
    }
    const createFull = await create();
    const [smallest, largest] = [results[0]!, results.at(-1)!];
    return {
      listConnections,
      durationS,
      sizes: results,
      createEmpty,
      createFull,
      createFullStoreEvents: largest.events,
      createRatio: createFull.requestsPerSecond / createEmpty.requestsPerSecond,
      listRatios: largest.lists.map((list, i) => ({
        name: list.name,
        ratio: list.p99Ms / Math.max(1, smallest.lists[i]!.p99Ms),
      })),
    };
  } catch (error) {
    throw new Error(
      `${(error as Error).message}\nservice output:\n${running.service?.child.output() ?? ''}`,
      {
        cause: error,
      },
    );
  } finally {
    await stop();
    removeTempDir(dataDir);
  }
};

/** The query plans at each size, for stdout. */
export const plansText = (results: GrowthResults): string =>
  results.sizes
    .map(
      (size) =>
        `EXPLAIN QUERY PLAN at ${size.observations.toLocaleString('en-US')} observations:\n` +
        size.plans
          .map((p) => `  -- ${p.name}\n  ${p.sql}\n${p.plan.map((l) => `    ${l}`).join('\n')}`)
          .join('\n'),
    )
    .join('\n');
