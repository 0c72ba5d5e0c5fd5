import type { EventRow as StoredEventRow } from './event-rows.js';
import type { EventFilter } from './port.js';

/**
 * The PostgreSQL event store's schema, as migration steps (src/postgres/migrate.ts, component
 * `eventstore`): a release appends steps, never edits one that shipped.
 *
 * Positions and commit order. A bigserial position is taken at insert time, but transactions commit in
 * another order, so a reader that reads up to the highest position it sees skips an event that commits
 * later with a lower one. Every event therefore records its transaction's id (`xid8`), and readers take
 * only events whose transaction is older than the oldest one still running,
 * `pg_snapshot_xmin(pg_current_snapshot())`: those transactions are all over, so nothing can still appear
 * among them. For that horizon to hold in position order as well, `append_events` gives a transaction its
 * id and its positions together, under a short advisory lock: a transaction with a later id has later
 * positions. The lock is held for the two calls only, not until the commit, so appends still commit (and
 * flush) side by side. docs/architecture.md#the-postgresql-event-store says more.
 */
export const eventStoreMigrations: readonly string[] = [
  `
  CREATE SEQUENCE events_position_seq AS bigint;
  CREATE TABLE events (
    position       bigint  PRIMARY KEY,
    transaction_id xid8    NOT NULL,
    event_id       text    NOT NULL UNIQUE,
    stream_name    text    COLLATE "C" NOT NULL,
    stream_version integer NOT NULL,
    event_type     text    NOT NULL,
    tenant_id      text    NOT NULL,
    -- Text, not jsonb: the stored form is exactly what the hash chain covers.
    data           text    NOT NULL,
    metadata       text    NOT NULL,
    hash           text    NOT NULL,
    UNIQUE (stream_name, stream_version)
  );
  CREATE INDEX events_by_type ON events (event_type, position);
  CREATE INDEX events_by_tenant ON events (tenant_id, position);
  CREATE INDEX events_by_tenant_stream ON events (tenant_id, stream_name, stream_version);

  -- Consumer groups: events up to fed are queued in consumer_group_events, which holds every event of
  -- the group not yet settled (acknowledged or parked away): claimed for a while by one consumer, retried,
  -- or parked (parked_at) until a replay.
  CREATE TABLE consumer_groups (
    name            text    PRIMARY KEY,
    filter          jsonb   NOT NULL,
    max_retry_count integer NOT NULL,
    fed             bigint  NOT NULL
  );
  CREATE TABLE consumer_group_events (
    group_name    text        NOT NULL REFERENCES consumer_groups (name) ON DELETE CASCADE,
    position      bigint      NOT NULL,
    retry_count   integer     NOT NULL DEFAULT 0,
    claimed_by    text,
    claimed_until timestamptz,
    parked_at     timestamptz,
    reason        text,
    replay        boolean     NOT NULL DEFAULT false,
    PRIMARY KEY (group_name, position)
  );

  -- One append: the stream's head checked, the transaction's id and the positions taken together under
  -- the allocation lock (released before the insert, and on any error, since it is a session lock), the
  -- events inserted. Returns the last position. The wake-up is not sent from here: a transaction that
  -- notifies holds a lock of the whole cluster through its commit, which would make the appends commit,
  -- and wait for their flush, one at a time (postgres.ts sends it after the commit).
  CREATE FUNCTION append_events(
    p_stream text, p_expected integer, p_ids text[], p_types text[], p_tenants text[],
    p_data text[], p_metadata text[], p_hashes text[]
  ) RETURNS bigint LANGUAGE plpgsql AS $$
  DECLARE
    n       integer := cardinality(p_ids);
    current integer;
    first   bigint;
  BEGIN
    SELECT coalesce(max(stream_version), -1) INTO current FROM events WHERE stream_name = p_stream;
    IF current <> p_expected THEN
      RAISE EXCEPTION 'stream % is at version %', p_stream, current
        USING ERRCODE = 'P0409', DETAIL = current::text;
    END IF;
    PERFORM pg_advisory_lock(1868722945, 0);
    BEGIN
      PERFORM pg_current_xact_id();
      first := nextval('events_position_seq');
      IF n > 1 THEN
        PERFORM setval('events_position_seq', first + n - 1);
      END IF;
    EXCEPTION WHEN OTHERS OR query_canceled THEN
      PERFORM pg_advisory_unlock(1868722945, 0);
      RAISE;
    END;
    PERFORM pg_advisory_unlock(1868722945, 0);
    INSERT INTO events (position, transaction_id, event_id, stream_name, stream_version, event_type,
                        tenant_id, data, metadata, hash)
    SELECT first + i - 1, pg_current_xact_id(), p_ids[i], p_stream, p_expected + i, p_types[i],
           p_tenants[i], p_data[i], p_metadata[i], p_hashes[i]
    FROM generate_subscripts(p_ids, 1) AS i;
    RETURN first + n - 1;
  END $$;
  `,
  // The head is no longer read: the caller's expected version is one it saw stored (or -1), and versions
  // only grow, so the stream is at that version or past it; past it, the first insert hits the unique
  // (stream_name, stream_version) index, which refuses the append as the check did (postgres.ts reads the
  // current version then). One index probe less per append: about a tenth more appends per second with 10
  // in flight. The events are inserted from one unnest rather than an array lookup per column and row.
  `
  CREATE OR REPLACE FUNCTION append_events(
    p_stream text, p_expected integer, p_ids text[], p_types text[], p_tenants text[],
    p_data text[], p_metadata text[], p_hashes text[]
  ) RETURNS bigint LANGUAGE plpgsql AS $$
  DECLARE
    n     integer := cardinality(p_ids);
    first bigint;
  BEGIN
    PERFORM pg_advisory_lock(1868722945, 0);
    BEGIN
      PERFORM pg_current_xact_id();
      first := nextval('events_position_seq');
      IF n > 1 THEN
        PERFORM setval('events_position_seq', first + n - 1);
      END IF;
    EXCEPTION WHEN OTHERS OR query_canceled THEN
      PERFORM pg_advisory_unlock(1868722945, 0);
      RAISE;
    END;
    PERFORM pg_advisory_unlock(1868722945, 0);
    INSERT INTO events (position, transaction_id, event_id, stream_name, stream_version, event_type,
                        tenant_id, data, metadata, hash)
    SELECT first + e.i - 1, pg_current_xact_id(), e.id, p_stream, p_expected + e.i, e.type, e.tenant,
           e.data, e.metadata, e.hash
    FROM unnest(p_ids, p_types, p_tenants, p_data, p_metadata, p_hashes)
           WITH ORDINALITY AS e(id, type, tenant, data, metadata, hash, i);
    RETURN first + n - 1;
  END $$;
  `,
];

/** A row of `events`: bigint columns arrive as strings from node-pg. */
export type EventRow = StoredEventRow<string>;

export const eventColumns =
  'e.position, e.event_id, e.stream_name, e.stream_version, e.event_type, e.data, e.metadata, e.hash';

/**
 * SQL for an event filter on the alias `e`, event types aside (see orderedPage), with its parameters
 * numbered from `firstParam`. Prefixes go as an array, so the text is stable per filter shape.
 */
const filterClause = (
  filter: Omit<EventFilter, 'eventTypes'>,
  firstParam: number,
): { sql: string; params: unknown[] } => {
  const parts: string[] = [];
  const params: unknown[] = [];
  const next = (value: unknown) => {
    params.push(value);
    return `$${firstParam + params.length - 1}`;
  };
  if (filter.streamPrefixes) {
    parts.push(
      `EXISTS (SELECT 1 FROM unnest(${next(filter.streamPrefixes)}::text[]) AS prefix WHERE starts_with(e.stream_name, prefix))`,
    );
  }
  if (filter.tenantId !== undefined) parts.push(`e.tenant_id = ${next(filter.tenantId)}`);
  return { sql: parts.map((part) => ` AND ${part}`).join(''), params };
};

export interface PageQuery {
  /** What to select of `events e`; `e.position` among it, as `position`. */
  columns: string;
  /** More relations after `events e` (`, horizon`), for `where` to use. */
  from?: string;
  /** The page's own conditions: where it starts, where it stops. */
  where: string;
  /** The page's size, as SQL (a parameter). */
  limit: string;
  /** Newest first: a page read backwards. */
  descending?: boolean;
}

/**
 * A page of events in position order that match `filter`, its parameters numbered from `firstParam`.
 * With event types, one branch per type, each a walk of the (event_type, position) index in order, which
 * a Merge Append takes from only as far as the page needs. One scan with `event_type = ANY(…)` leaves the
 * planner to choose between walking every event by position (slow when the types are rare) and sorting
 * every match past the position (slow when they are common), and it was seen to choose the sort on a
 * backlog of common types: 240,000 events/s down to 10,000. An empty list of types matches nothing.
 */
export const orderedPage = (
  { columns, from = '', where, limit, descending = false }: PageQuery,
  { eventTypes, ...filter }: EventFilter = {},
  firstParam: number,
): { sql: string; params: unknown[] } => {
  const clause = filterClause(filter, firstParam);
  const order = descending ? ' DESC' : '';
  const select = (condition: string) =>
    `SELECT ${columns} FROM events e${from} WHERE ${where}${clause.sql}${condition} ORDER BY e.position${order} LIMIT ${limit}`;
  if (!eventTypes) return { sql: select(''), params: clause.params };
  if (eventTypes.length === 0) return { sql: select(' AND false'), params: clause.params };
  const types = [...new Set(eventTypes)]; // a type named twice would be read twice
  const typeParam = (index: number) => `$${firstParam + clause.params.length + index}`;
  const branches = types.map((_, index) => `(${select(` AND e.event_type = ${typeParam(index)}`)})`);
  return {
    sql: `SELECT * FROM (${branches.join(' UNION ALL ')}) AS typed ORDER BY typed.position${order} LIMIT ${limit}`,
    params: [...clause.params, ...types],
  };
};

/**
 * The horizon and the safe head of a read, as CTEs `horizon` and `heads`, to prefix a statement with: the
 * oldest transaction still running, the newest position below it (every event at or below it that will
 * ever be visible is visible now), and the newest position visible at all (above the safe head while an
 * older transaction still runs).
 *
 * Transaction ids are the cluster's, so the oldest one running may be another database's, which can never
 * write these events. Those still running in another database when the statement looks are left out of
 * the horizon; one not identified as such (it ended meanwhile, or its session is hidden from this role)
 * counts, which is only ever more careful. Without the others, the horizon is the snapshot's xmax.
 */
export const horizonCtes = `
  snapshot AS MATERIALIZED (SELECT pg_current_snapshot() AS s),
  horizon AS MATERIALIZED (
    SELECT coalesce(
      (SELECT min(x) FROM snapshot, pg_snapshot_xip(snapshot.s) AS x
       WHERE NOT EXISTS (
         SELECT 1 FROM pg_stat_get_activity(NULL) AS a
         WHERE a.backend_xid = x::xid
           AND a.datid <> (SELECT oid FROM pg_database WHERE datname = current_database())
       )),
      (SELECT pg_snapshot_xmax(s) FROM snapshot)
    ) AS xmin
  ),
  heads AS MATERIALIZED (
    SELECT
      coalesce((SELECT h.position FROM events h, horizon WHERE h.transaction_id < horizon.xmin
                ORDER BY h.position DESC LIMIT 1), 0) AS safe,
      coalesce((SELECT max(position) FROM events), 0) AS visible
  )`;
