import Router from '@koa/router';
import Database from 'better-sqlite3';
import type * as t from 'io-ts';
import type { Context } from 'koa';
import { join } from 'node:path';
import { hashSecret } from '../src/credentials/secrets.js';
import { cursorCodec } from '../src/http/cursor.js';
import { CreateObservationBody, ListObservationsQuery } from '../src/observations/codecs.js';
import {
  decode,
  env,
  jsonBody,
  newObservation,
  Problem,
  scopeGuard,
  servePeer,
  tenantOf,
} from './peer-http.js';

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

/** The key's row is read once; every later request with it is a hash and a Map lookup (bench/peer-http.ts). */
const keyRow = db.prepare('SELECT tenant_id AS tenantId, scopes FROM api_keys WHERE hash = ?');
const requireScope = scopeGuard((hash) => {
  const row = keyRow.get(hash) as { tenantId: string; scopes: string } | undefined;
  return row ? { tenantId: row.tenantId, scopes: row.scopes.split(' ') } : null;
});

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
  const json = await jsonBody(ctx);
  const observation = newObservation(tenantOf(ctx), decode(CreateObservationBody, json));
  const { tenantId, id, createdAt: at } = observation;
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
  const { sql, values, queryKey } = listSql(tenantOf(ctx), params);
  const rows = prepared(sql).all(...values, limit + 1) as { doc: string; id: string; sortValue: string }[];
  const page = rows.slice(0, limit);
  const last = page.at(-1);
  const nextCursor =
    rows.length > limit && last ? cursors.encode({ value: last.sortValue, id: last.id }, queryKey) : null;
  ctx.type = 'application/json';
  ctx.body = `{"data":[${page.map((row) => row.doc).join(',')}],"nextCursor":${JSON.stringify(nextCursor)}}`;
});

servePeer(router, () => {
  db.close();
});
