import Router from '@koa/router';
import Database from 'better-sqlite3';
import { isLeft } from 'fp-ts/lib/Either.js';
import type * as t from 'io-ts';
import Koa, { type Context } from 'koa';
import { join } from 'node:path';
import getRawBody from 'raw-body';
import { hashSecret } from '../src/credentials/secrets.js';
import { newId } from '../src/core/ids.js';
import { fieldErrors } from '../src/http/codec.js';
import { cursorCodec } from '../src/http/cursor.js';
import { CreateObservationBody, ListObservationsQuery } from '../src/observations/codecs.js';

/**
 * The HTTP baseline of the `http` phase (issue 13): what a competent engineer writes for the same two
 * endpoints without event sourcing. Koa and @koa/router; the service's own io-ts codecs for the create body
 * and the list parameters; an API-key check that looks the key's SHA-256 up in SQLite once and then in a
 * Map; one better-sqlite3 table of observations written as durably as the service's event store (WAL,
 * `synchronous=FULL`, the inserts of one event-loop turn in one transaction: group commit), with the same
 * indexes as the observations read model and the same keyset list (filters, sort, signed cursor). Bodies
 * are read as the echo server reads them (raw-body, JSON.parse); errors are problem+json.
 *
 * Env: PORT, HOST, DATA_DIR (its peer.db), PEER_API_KEY and PEER_TENANT (the one key it knows, with the
 * observation scopes), CURSOR_SECRET. Started as a child process, like the service and the echo server.
 */

const env = (name: string): string => {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is not set`);
  return value;
};

const db = new Database(join(env('DATA_DIR'), 'peer.db'));
db.pragma('journal_mode = WAL');
db.pragma('synchronous = FULL');
db.pragma('busy_timeout = 5000');
db.exec(`
  CREATE TABLE IF NOT EXISTS api_keys (hash TEXT PRIMARY KEY, tenant_id TEXT NOT NULL, scopes TEXT NOT NULL);
  CREATE TABLE IF NOT EXISTS observations (
    tenant_id TEXT NOT NULL, id TEXT NOT NULL, doc TEXT NOT NULL,
    observed_at TEXT NOT NULL, created_at TEXT NOT NULL, updated_at TEXT NOT NULL,
    location_id TEXT, visit_id TEXT, lat REAL, lon REAL,
    PRIMARY KEY (tenant_id, id)
  ) WITHOUT ROWID;
  CREATE INDEX IF NOT EXISTS by_observed ON observations (tenant_id, observed_at, id);
  CREATE INDEX IF NOT EXISTS by_updated ON observations (tenant_id, updated_at, id);
  CREATE INDEX IF NOT EXISTS by_created ON observations (tenant_id, created_at, id);
  CREATE INDEX IF NOT EXISTS by_location ON observations (tenant_id, location_id, observed_at, id);
  CREATE INDEX IF NOT EXISTS by_visit ON observations (tenant_id, visit_id, observed_at, id);
  CREATE INDEX IF NOT EXISTS by_position ON observations (tenant_id, lat, lon, id);`);
db.prepare('INSERT OR REPLACE INTO api_keys (hash, tenant_id, scopes) VALUES (?, ?, ?)').run(
  hashSecret(env('PEER_API_KEY')),
  env('PEER_TENANT'),
  'observations:read observations:write',
);

class Problem extends Error {
  constructor(
    readonly status: number,
    readonly title: string,
    readonly extra: Record<string, unknown> = {},
  ) {
    super(title);
  }
}

/** The key's row is read once; every later request with it is a hash and a Map lookup. */
const keys = new Map<string, { tenantId: string; scopes: string[] } | null>();
const keyRow = db.prepare('SELECT tenant_id AS tenantId, scopes FROM api_keys WHERE hash = ?');
const requireScope =
  (scope: string): Koa.Middleware =>
  async (ctx, next) => {
    const key = ctx.get('X-API-Key');
    if (!key) throw new Problem(401, 'Unauthorized');
    const hash = hashSecret(key);
    let principal = keys.get(hash);
    if (principal === undefined) {
      const row = keyRow.get(hash) as { tenantId: string; scopes: string } | undefined;
      principal = row ? { tenantId: row.tenantId, scopes: row.scopes.split(' ') } : null;
      keys.set(hash, principal);
    }
    if (!principal) throw new Problem(401, 'Unauthorized');
    if (principal.tenantId !== (ctx.params as Record<string, string>).tenantId)
      throw new Problem(404, 'No such tenant');
    if (!principal.scopes.includes(scope)) throw new Problem(403, 'Forbidden');
    await next();
  };

const decode = <A>(codec: t.Type<A, A, unknown>, value: unknown): A => {
  const result = codec.decode(value);
  if (isLeft(result)) throw new Problem(400, 'Validation failed', { errors: fieldErrors(result.left) });
  return result.right;
};

/** Group commit: the inserts asked for in one turn of the event loop share one transaction, one fsync. */
type Row = [
  string,
  string,
  string,
  string,
  string,
  string,
  string | null,
  string | null,
  number | null,
  number | null,
];
const insert = db.prepare(
  `INSERT INTO observations (tenant_id, id, doc, observed_at, created_at, updated_at, location_id, visit_id, lat, lon)
   VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
);
const insertAll = db.transaction((rows: Row[]) => {
  for (const row of rows) insert.run(...row);
});
let pending: { row: Row; resolve: () => void; reject: (error: Error) => void }[] = [];
const flush = () => {
  const batch = pending;
  pending = [];
  try {
    insertAll.immediate(batch.map((p) => p.row));
    for (const p of batch) p.resolve();
  } catch (error) {
    for (const p of batch) p.reject(error as Error);
  }
};
const insertObservation = (row: Row) =>
  new Promise<void>((resolve, reject) => {
    pending.push({ row, resolve, reject });
    if (pending.length === 1) setImmediate(flush);
  });

const cursors = cursorCodec(env('CURSOR_SECRET'));
const sortColumns: Record<string, string> = {
  observedAt: 'observed_at',
  updatedAt: 'updated_at',
  createdAt: 'created_at',
};

/** The service's list, in plain SQL: filters, keyset over (sort column, id), one row more than the limit. */
const listSql = (tenantId: string, params: t.TypeOf<typeof ListObservationsQuery>) => {
  const where = ['tenant_id = ?'];
  const values: (string | number)[] = [tenantId];
  const add = (sql: string, ...more: (string | number)[]) => {
    where.push(sql);
    values.push(...more);
  };
  if (params.observedFrom) add('observed_at >= ?', params.observedFrom);
  if (params.observedTo) add('observed_at <= ?', params.observedTo);
  if (params.updatedSince) add('updated_at >= ?', params.updatedSince);
  if (params.locationId) add('location_id = ?', params.locationId);
  if (params.visitId) add('visit_id = ?', params.visitId);
  if (params.bbox) {
    const { minLon, minLat, maxLon, maxLat } = params.bbox;
    add('lat BETWEEN ? AND ?', minLat, maxLat);
    if (minLon <= maxLon) add('lon BETWEEN ? AND ?', minLon, maxLon);
    else add('(lon >= ? OR lon <= ?)', minLon, maxLon);
  }
  const sort = params.sort ?? '-observedAt';
  const desc = sort.startsWith('-');
  const column = sortColumns[sort.replace(/^-/, '')]!;
  const queryKey = JSON.stringify([tenantId, where, values, sort]);
  if (params.cursor) {
    let after: { value: unknown; id: string };
    try {
      after = cursors.decode(params.cursor, queryKey);
    } catch {
      throw new Problem(400, 'Invalid cursor');
    }
    add(`(${column}, id) ${desc ? '<' : '>'} (?, ?)`, String(after.value), after.id);
  }
  const direction = desc ? 'DESC' : 'ASC';
  const sql = `SELECT doc, id, ${column} AS sortValue FROM observations WHERE ${where.join(' AND ')}
    ORDER BY ${column} ${direction}, id ${direction} LIMIT ?`;
  return { sql, values, queryKey };
};
const statements = new Map<string, Database.Statement>();
const prepared = (sql: string) => {
  let statement = statements.get(sql);
  if (!statement) statements.set(sql, (statement = db.prepare(sql)));
  return statement;
};

const router = new Router({ prefix: '/v1/tenants/:tenantId/observations' });
router.post('/', requireScope('observations:write'), async (ctx: Context) => {
  if (ctx.request.type !== 'application/json') throw new Problem(415, 'Unsupported Media Type');
  const text = await getRawBody(ctx.req, {
    length: ctx.get('Content-Length') || undefined,
    limit: 1024 * 1024,
    encoding: 'utf-8',
  });
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    throw new Problem(400, 'The body is not JSON');
  }
  const body = decode(CreateObservationBody, json);
  const tenantId = (ctx.params as Record<string, string>).tenantId!;
  const now = new Date();
  const id = newId('o', now);
  const at = now.toISOString();
  const observation = {
    id,
    tenantId,
    observedAt: body.observedAt,
    position: body.position ?? null,
    locationId: body.locationId ?? null,
    visitId: body.visitId ?? null,
    notes: body.notes ?? null,
    attributes: body.attributes ?? {},
    media: [],
    createdAt: at,
    updatedAt: at,
    version: 1,
  };
  await insertObservation([
    tenantId,
    id,
    JSON.stringify(observation),
    observation.observedAt,
    at,
    at,
    observation.locationId,
    observation.visitId,
    observation.position?.lat ?? null,
    observation.position?.lon ?? null,
  ]);
  ctx.status = 201;
  ctx.set('Location', `/v1/tenants/${tenantId}/observations/${id}`);
  ctx.set('ETag', '"1"');
  ctx.body = observation;
});
router.get('/', requireScope('observations:read'), (ctx: Context) => {
  const params = decode(ListObservationsQuery, ctx.query);
  const limit = params.limit ?? 50;
  const { sql, values, queryKey } = listSql((ctx.params as Record<string, string>).tenantId!, params);
  const rows = prepared(sql).all(...values, limit + 1) as { doc: string; id: string; sortValue: string }[];
  const page = rows.slice(0, limit);
  const last = page.at(-1);
  const nextCursor =
    rows.length > limit && last ? cursors.encode({ value: last.sortValue, id: last.id }, queryKey) : null;
  ctx.type = 'application/json';
  ctx.body = `{"data":[${page.map((row) => row.doc).join(',')}],"nextCursor":${JSON.stringify(nextCursor)}}`;
});

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
const shutdown = () => {
  server.close();
  server.closeIdleConnections();
  db.close();
  process.exit(0);
};
// Gone with the benchmark even if it was killed: its end of the stdin pipe closes.
process.stdin.on('end', shutdown);
process.stdin.resume();
process.once('SIGTERM', shutdown);
