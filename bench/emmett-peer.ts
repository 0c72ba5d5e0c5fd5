import { sql } from '@event-driven-io/dumbo';
import { projections, STREAM_DOES_NOT_EXIST, type Event, type ReadEvent } from '@event-driven-io/emmett';
import { getPostgreSQLEventStore, pongoSingleStreamProjection } from '@event-driven-io/emmett-postgresql';
import { pongoClient } from '@event-driven-io/pongo';
import Router from '@koa/router';
import type { Context } from 'koa';
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
  type PeerObservation,
  type PeerPrincipal,
} from './peer-http.js';

/**
 * The event-sourced peer of the `emmett` phase (issue 28): the same create and list built the way emmett's
 * own samples build them on PostgreSQL. Koa and @koa/router; the service's io-ts codecs; the API-key check
 * of bench/crud-peer.ts (the key's SHA-256 read once, from a pongo collection, then a Map). A create appends
 * one `ObservationRecorded` to its own stream `observation-<tenantId>_<id>` with `STREAM_DOES_NOT_EXIST`;
 * an inline `pongoSingleStreamProjection` writes the stream's `observations` document in the append's
 * transaction, so the 201 follows one commit (`synchronous_commit` on, as the service's) that made both the
 * event and the read model durable and visible. A create needs no state, so it appends directly rather than
 * through `CommandHandler`, which would read the (empty) stream first: the cheaper of emmett's two ways.
 *
 * The list is pongo's raw-SQL escape hatch (`collection.sql.query`): pongo's `find` has no sort or limit,
 * and an expert would not read a tenant's every document to show 50. An expression index on (tenantId,
 * observedAt, _id) serves the newest-first keyset page, with the service's signed cursor. Only `limit` and
 * `cursor` are supported; the bench asks for nothing else.
 *
 * Env: PORT, HOST, DATABASE_URL (a database of its own), PEER_API_KEY and PEER_TENANT, CURSOR_SECRET.
 */

type ObservationRecorded = Event<'ObservationRecorded', PeerObservation>;

const connectionString = env('DATABASE_URL');

const eventStore = getPostgreSQLEventStore(connectionString, {
  projections: projections.inline([
    pongoSingleStreamProjection<PeerObservation, ObservationRecorded>({
      collectionName: 'observations',
      canHandle: ['ObservationRecorded'],
      evolve: (_document: PeerObservation | null, event: ReadEvent<ObservationRecorded>) => event.data,
    }),
  ]),
});
const pongo = pongoClient(connectionString);
const observations = pongo.db().collection<PeerObservation>('observations');
const apiKeys = pongo.db().collection<PeerPrincipal>('api_keys');

await eventStore.schema.migrate();
await observations.schema.migrate();
await observations.sql.command(
  sql(
    `CREATE INDEX IF NOT EXISTS observations_by_tenant_observed
       ON observations ((data->>'tenantId'), (data->>'observedAt') DESC, _id DESC)`,
  ),
);
await apiKeys.insertOne({
  _id: hashSecret(env('PEER_API_KEY')),
  tenantId: env('PEER_TENANT'),
  scopes: ['observations:read', 'observations:write'],
});

const requireScope = scopeGuard(async (hash) => {
  const found = await apiKeys.findOne({ _id: hash });
  return found ? { tenantId: found.tenantId, scopes: found.scopes } : null;
});
const cursors = cursorCodec(env('CURSOR_SECRET'));

const router = new Router({ prefix: '/v1/tenants/:tenantId/observations' });
router.post('/', requireScope('observations:write'), async (ctx: Context) => {
  const observation = newObservation(tenantOf(ctx), decode(CreateObservationBody, await jsonBody(ctx)));
  const { tenantId, id } = observation;
  const appended = await eventStore.appendToStream<ObservationRecorded>(
    `observation-${tenantId}_${id}`,
    [{ type: 'ObservationRecorded', data: observation }],
    { expectedStreamVersion: STREAM_DOES_NOT_EXIST },
  );
  ctx.status = 201;
  ctx.set('Location', `/v1/tenants/${tenantId}/observations/${id}`);
  ctx.set('ETag', `"${appended.nextExpectedStreamVersion}"`);
  ctx.body = observation;
});

/** The keyset after a cursor's (observedAt, _id), newest first; the cursor is bound to the tenant. */
const afterCursor = (cursor: string | undefined, queryKey: string) => {
  if (!cursor) return sql('');
  let after: { value: unknown; id: string };
  try {
    after = cursors.decode(cursor, queryKey);
  } catch {
    throw new Problem(400, 'Invalid cursor');
  }
  return sql(`AND (data->>'observedAt', _id) < (%L, %L)`, String(after.value), after.id);
};

router.get('/', requireScope('observations:read'), async (ctx: Context) => {
  const { limit = 50, cursor, ...filters } = decode(ListObservationsQuery, ctx.query);
  if (Object.values(filters).some((value) => value !== undefined && value !== '-observedAt'))
    throw new Problem(400, 'This peer lists newest first with limit and cursor only');
  const tenantId = tenantOf(ctx);
  const queryKey = JSON.stringify([tenantId, '-observedAt']);
  const rows = await observations.sql.query<{ _id: string; data: PeerObservation }>(
    sql(
      `SELECT _id, data FROM observations WHERE data->>'tenantId' = %L %s
        ORDER BY data->>'observedAt' DESC, _id DESC LIMIT %s`,
      tenantId,
      afterCursor(cursor, queryKey),
      limit + 1,
    ),
  );
  const page = rows.slice(0, limit);
  const last = page.at(-1);
  ctx.body = {
    data: page.map((row) => row.data),
    nextCursor:
      rows.length > limit && last
        ? cursors.encode({ value: last.data.observedAt, id: last._id }, queryKey)
        : null,
  };
});

servePeer(router, async () => {
  await eventStore.close();
  await pongo.close();
});
