import pg from 'pg';
import type { RecordedEvent } from '../src/core/events.js';
import { openPostgresEventStore } from '../src/eventstore/postgres.js';
import type { EventStore } from '../src/eventstore/port.js';
import { observationStream } from './events.js';
import { createBenchDatabase } from './postgres-db.js';
import { seedConcurrently } from './rebuild.js';
import { catchUpFigures, type CatchUpResults } from './store.js';

/**
 * The PostgreSQL event store against PostgreSQL itself, each in a database of its own:
 * - `append`: the store's appends, `batchSize` events per call (one stream per call), against raw INSERTs of
 *   the same rows in the same batches, one statement per batch in its own transaction, into a plain table
 *   with the same columns and only a primary key, in the same database. One call at a time with 1 and with
 *   BENCH_APPEND_BATCH events, as on SQLite, and 1 event per call with `inFlight` calls at once (the
 *   service's case: many requests, each its own commit), the store on a pool of that size, the raw INSERTs
 *   on another. Target: ≥ 0.7 in every mode. The same INSERTs into `raw_indexed`, a copy of `events` with
 *   all its indexes, are reported beside them (no target): what the store's indexes cost, against what the
 *   store adds (the hash chain, the position allocation, the wake-up).
 * - `catchup`: a catch-up subscription reading everything from position 0, against a raw SELECT of the same
 *   rows and columns in the same pages (keyset on position), the mean of one before and one after it.
 *   Target: ≥ 0.5. The phase's other figures (raw readAll, projection) are bench/store.ts's, as on SQLite.
 */

const seconds = (since: number) => (performance.now() - since) / 1000;

export interface PgAppendMode {
  batchSize: number;
  /** Calls at once, on as many connections. */
  inFlight: number;
  events: number;
  storeEventsPerSecond: number;
  rawInsertEventsPerSecond: number;
  /** store ÷ raw INSERT. */
  ratio: number;
  /** The same INSERTs into a table with the events table's indexes. */
  rawIndexedEventsPerSecond: number;
}

export interface PgAppendResults {
  modes: PgAppendMode[];
}

/** Streams appended before the clock starts (first connections, plans, JIT); their rows warm the raw side too. */
const warmupStreams = 20;

const rawTable = `
  CREATE TABLE raw_events (
    position       bigint  PRIMARY KEY,
    transaction_id xid8    NOT NULL,
    event_id       text    NOT NULL,
    stream_name    text    NOT NULL,
    stream_version integer NOT NULL,
    event_type     text    NOT NULL,
    tenant_id      text    NOT NULL,
    data           text    NOT NULL,
    metadata       text    NOT NULL,
    hash           text    NOT NULL
  )`;

interface StoredRow {
  position: string;
  event_id: string;
  stream_name: string;
  stream_version: number;
  event_type: string;
  tenant_id: string;
  data: string;
  metadata: string;
  hash: string;
}

/** Runs `work` over `items` with at most `inFlight` at once, in order of start. */
const inParallel = async <T>(items: readonly T[], inFlight: number, work: (item: T) => Promise<unknown>) => {
  let next = 0;
  const loop = async () => {
    while (next < items.length) await work(items[next++]!);
  };
  await Promise.all(Array.from({ length: inFlight }, loop));
};

/** One multi-row INSERT of a batch into `table`, as append_events inserts its events (arrays unnested). */
const insertBatch = (client: pg.Pool, table: string, rows: readonly StoredRow[]) =>
  client.query(
    `INSERT INTO ${table} (position, transaction_id, event_id, stream_name, stream_version, event_type,
                             tenant_id, data, metadata, hash)
     SELECT r.position, pg_current_xact_id(), r.event_id, r.stream_name, r.stream_version, r.event_type,
            r.tenant_id, r.data, r.metadata, r.hash
     FROM unnest($1::bigint[], $2::text[], $3::text[], $4::integer[], $5::text[], $6::text[], $7::text[],
                 $8::text[], $9::text[])
       AS r(position, event_id, stream_name, stream_version, event_type, tenant_id, data, metadata, hash)`,
    [
      rows.map((r) => r.position),
      rows.map((r) => r.event_id),
      rows.map((r) => r.stream_name),
      rows.map((r) => r.stream_version),
      rows.map((r) => r.event_type),
      rows.map((r) => r.tenant_id),
      rows.map((r) => r.data),
      rows.map((r) => r.metadata),
      rows.map((r) => r.hash),
    ],
  );

/** The stored rows in position order, cut where the stream changes: one batch per append. */
const storedBatches = async (client: pg.Pool): Promise<StoredRow[][]> => {
  const { rows } = await client.query<StoredRow>(
    `SELECT position, event_id, stream_name, stream_version, event_type, tenant_id, data, metadata, hash
     FROM events ORDER BY position`,
  );
  const batches: StoredRow[][] = [];
  for (const row of rows) {
    const last = batches.at(-1);
    if (last && last[0]!.stream_name === row.stream_name) last.push(row);
    else batches.push([row]);
  }
  return batches;
};

const appendMode = async (events: number, batchSize: number, inFlight: number): Promise<PgAppendMode> => {
  const database = createBenchDatabase(`append${batchSize}x${inFlight}`);
  try {
    const streams = Array.from({ length: Math.ceil(events / batchSize) }, (_, i) =>
      observationStream(i, batchSize),
    );
    const warmup = Array.from({ length: warmupStreams }, (_, i) =>
      observationStream(10_000_000 + i, batchSize),
    );
    const store = await openPostgresEventStore(database.url, { poolSize: inFlight });
    let storeSeconds: number;
    try {
      const append = ({ stream, events: batch }: (typeof streams)[number]) =>
        store.appendToStream(stream, batch, 'no_stream');
      await inParallel(warmup, inFlight, append);
      const started = performance.now();
      await inParallel(streams, inFlight, append);
      storeSeconds = seconds(started);
    } finally {
      await store.close();
    }
    const written = streams.reduce((n, s) => n + s.events.length, 0);

    const client = new pg.Pool({ connectionString: database.url, max: inFlight });
    try {
      await client.query(rawTable);
      await client.query('CREATE TABLE raw_indexed (LIKE events INCLUDING ALL)');
      const batches = await storedBatches(client);
      if (batches.length !== warmupStreams + streams.length)
        throw new Error(`found ${batches.length} appends of ${warmupStreams + streams.length}`);
      const timedInserts = async (table: string) => {
        const insert = (batch: StoredRow[]) => insertBatch(client, table, batch);
        await inParallel(batches.slice(0, warmupStreams), inFlight, insert);
        const started = performance.now();
        await inParallel(batches.slice(warmupStreams), inFlight, insert);
        return written / seconds(started);
      };
      const storeEventsPerSecond = written / storeSeconds;
      const rawInsertEventsPerSecond = await timedInserts('raw_events');
      return {
        batchSize,
        inFlight,
        events: written,
        storeEventsPerSecond,
        rawInsertEventsPerSecond,
        ratio: storeEventsPerSecond / rawInsertEventsPerSecond,
        rawIndexedEventsPerSecond: await timedInserts('raw_indexed'),
      };
    } finally {
      await client.end();
    }
  } finally {
    database.drop();
  }
};

/** DATABASE_POOL_SIZE's default: the most appends one service process has in flight. */
export const appendsInFlight = 10;

/** `events` events per mode, each mode in a fresh database. */
export const postgresAppend = async (events: number, batchSize: number): Promise<PgAppendResults> => ({
  modes: [
    await appendMode(events, 1, 1),
    await appendMode(events, batchSize, 1),
    await appendMode(events, 1, appendsInFlight),
  ],
});

export interface PgCatchUpResults extends CatchUpResults {
  /** Events per page, of the subscription and of the raw SELECT. */
  pageSize: number;
  rawSelectEventsPerSecond: number;
  subscriptionEventsPerSecond: number;
  subscriptionSeconds: number;
  /** subscription ÷ raw SELECT. */
  subscriptionPerRawSelect: number;
}

const pageSize = 500;

/** Every row of `events` in pages of `pageSize`, keyset on position, the columns a subscription reads. */
const timedSelect = async (client: pg.Client, expected: number): Promise<number> => {
  const started = performance.now();
  let count = 0;
  for (let after = '0'; ;) {
    const { rows } = await client.query<{ position: string }>(
      `SELECT position, event_id, stream_name, stream_version, event_type, data, metadata, hash
       FROM events WHERE position > $1 ORDER BY position LIMIT $2`,
      [after, pageSize],
    );
    count += rows.length;
    if (rows.length < pageSize) break;
    after = rows.at(-1)!.position;
  }
  if (count !== expected) throw new Error(`raw SELECT saw ${count} of ${expected} events`);
  return count / seconds(started);
};

/** A catch-up subscription from 0, doing nothing with the events, until it has handed over `expected`. */
const timedSubscription = async (store: EventStore, expected: number) => {
  const started = performance.now();
  let count = 0;
  let reached!: () => void;
  const done = new Promise<void>((resolve) => (reached = resolve));
  const subscription = store.subscribe(
    { after: 0, batchSize: pageSize },
    (batch: readonly RecordedEvent[]) => {
      count += batch.length;
      if (count >= expected) reached();
      return Promise.resolve();
    },
  );
  await Promise.race([done, subscription.done.then(() => Promise.reject(new Error('subscription ended')))]);
  const elapsed = seconds(started);
  await subscription.stop();
  if (count !== expected) throw new Error(`the subscription saw ${count} of ${expected} events`);
  return { seconds: elapsed, eventsPerSecond: count / elapsed };
};

/**
 * The catch-up phase on PostgreSQL: `events` events seeded (500 appends in flight), then bench/store.ts's
 * raw readAll and projection figures (read models in the same database), then the subscription against the
 * raw SELECT.
 */
export const postgresCatchUp = async (events: number, perStream: number): Promise<PgCatchUpResults> => {
  const database = createBenchDatabase('catchup');
  try {
    const store = await openPostgresEventStore(database.url);
    const client = new pg.Client({ connectionString: database.url });
    await client.connect();
    try {
      const seeded = await seedConcurrently(store, events, perStream);
      const figures = await catchUpFigures(store, seeded, perStream, database.url);
      await timedSelect(client, seeded.events); // unmeasured: the same warm cache for both sides
      const before = await timedSelect(client, seeded.events);
      const subscription = await timedSubscription(store, seeded.events);
      const after = await timedSelect(client, seeded.events);
      const rawSelectEventsPerSecond = (before + after) / 2;
      return {
        ...figures,
        pageSize,
        rawSelectEventsPerSecond,
        subscriptionEventsPerSecond: subscription.eventsPerSecond,
        subscriptionSeconds: subscription.seconds,
        subscriptionPerRawSelect: subscription.eventsPerSecond / rawSelectEventsPerSecond,
      };
    } finally {
      await client.end();
      await store.close();
    }
  } finally {
    database.drop();
  }
};
