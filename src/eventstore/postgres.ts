import type { DatabaseError, QueryResultRow } from 'pg';
import { LRUCache } from 'lru-cache';
import type { ExpectedVersion, NewEvent } from '../core/events.js';
import { NO_STREAM, satisfiesExpected } from '../core/events.js';
import { ConflictError, VersionConflictError } from '../core/errors.js';
import { acquirePostgres, orUnavailable, type PoolOptions } from '../postgres/client.js';
import { migrate } from '../postgres/migrate.js';
import { adoptRestoredEvents } from './postgres-restore.js';
import type { AppendResult, EventStore, ReadAllOptions } from './port.js';
import { AppendSignal, defaultPollMs, type Appended } from './append-signal.js';
import { chainEvent, genesisHash } from './hash-chain.js';
import { catchUp, type SourcePage } from './catch-up-engine.js';
import { consumerGroups } from './postgres-groups.js';
import {
  appendNotifier,
  HeardCommits,
  listenForAppends,
  OtherListeners,
  type Listener,
} from './postgres-listener.js';
import {
  eventColumns,
  eventStoreMigrations,
  horizonCtes,
  orderedPage,
  type EventRow,
} from './postgres-schema.js';
import { toRecordedEvent } from './event-rows.js';

/**
 * The PostgreSQL event store (node-postgres). Commit order and the horizon readers stop at are explained
 * in postgres-schema.ts; consumer groups in postgres-groups.ts. Appends from any process wake this
 * process's subscribers through LISTEN/NOTIFY, a hint only: they also poll every `pollMs`.
 *
 * Unlike the embedded store, every process may run every duty at once: consumer groups share their events
 * between consumers, and read models are guarded per document, so every lease is granted, as on
 * EventStoreDB.
 */

export interface PostgresEventStoreOptions extends PoolOptions {
  /** The longest an idle subscriber waits before it reads again. */
  pollMs?: number;
  /** How long a consumer's claim on an event holds unrenewed (a consumer killed -9 holds it that long). */
  claimTtlMs?: number;
  /** A consumer group's claims could not be renewed (postgres-groups.ts): the service logs and counts it. */
  onClaimRenewalFailed?: (group: string, error: unknown) => void;
}

const uniqueViolation = (error: unknown, constraint: string): boolean =>
  (error as DatabaseError).code === '23505' && (error as DatabaseError).constraint === constraint;

/** How many streams' last known version and hash are kept to chain appends without reading the head. */
const knownHeadsKept = 1000;

export const openPostgresEventStore = async (
  url: string,
  {
    pollMs = defaultPollMs,
    claimTtlMs = 15_000,
    onClaimRenewalFailed,
    ...poolOptions
  }: PostgresEventStoreOptions = {},
): Promise<EventStore> => {
  const handle = acquirePostgres(url, poolOptions);
  const { pool } = handle;
  try {
    await orUnavailable(migrate(pool, 'eventstore', eventStoreMigrations));
    await orUnavailable(adoptRestoredEvents(pool));
  } catch (error) {
    await handle.release();
    throw error;
  }
  const query = <R extends QueryResultRow>(text: string, params: unknown[] = []) =>
    orUnavailable(pool.query<R>(text, params));

  const signal = new AppendSignal();
  const commits = new HeardCommits();
  /** A commit of any process: recorded before the subscribers wake, so that they can walk past it. */
  const heard = (appended: Appended) => {
    commits.record(appended);
    signal.notify(appended);
  };
  let listener: Listener | null = null;
  /** Subscribers are woken by other processes' appends once the first of them starts. */
  const listening = () => {
    listener ??= listenForAppends(url, { heard, others: otherListeners, newListener: () => others.nudge() });
  };

  /**
   * The version and hash of a stream's event this process last read or wrote. An event never changes, so
   * an append expecting exactly that version can chain to that hash without reading the head again;
   * append_events still refuses it when the stream moved on.
   */
  const knownHeads = new LRUCache<string, { version: number; hash: string }>({ max: knownHeadsKept });
  const know = (streamName: string, version: number, hash: string) => {
    knownHeads.set(streamName, { version, hash });
  };

  const headOf = async (
    streamName: string,
    expected: ExpectedVersion,
  ): Promise<{ version: number; hash: string }> => {
    // A stream expected not to exist (by name, or as version -1: a create decided without a read) starts
    // the chain: append_events refuses it if it does exist.
    if (expected === 'no_stream' || expected === NO_STREAM) return { version: NO_STREAM, hash: genesisHash };
    const known = knownHeads.get(streamName);
    if (known && known.version === expected) return known;
    // Named, as the append: parsed and planned once per connection, not before every append (planning
    // was most of its server time: 0.15–0.25 ms per create against 0.02 ms executing).
    const { rows } = await orUnavailable(
      pool.query<{ version: number; hash: string }>({
        name: 'stream_head',
        text: 'SELECT stream_version AS version, hash FROM events WHERE stream_name = $1 ORDER BY stream_version DESC LIMIT 1',
        values: [streamName],
      }),
    );
    return rows[0] ?? { version: NO_STREAM, hash: genesisHash };
  };

  const currentVersionOf = async (streamName: string): Promise<number> => {
    const { rows } = await query<{ version: number | null }>(
      'SELECT max(stream_version) AS version FROM events WHERE stream_name = $1',
      [streamName],
    );
    return rows[0]?.version ?? NO_STREAM;
  };

  const otherListeners = new OtherListeners();
  const others = appendNotifier(url, otherListeners);

  const appendOnce = async (
    streamName: string,
    events: readonly NewEvent[],
    expected: ExpectedVersion,
  ): Promise<AppendResult> => {
    const head = await headOf(streamName, expected);
    if (!satisfiesExpected(expected, head.version)) {
      throw new VersionConflictError(streamName, String(expected), head.version);
    }
    const columns = { ids: [] as string[], types: [] as string[], tenants: [] as string[] };
    const stored = { data: [] as string[], metadata: [] as string[], hashes: [] as string[] };
    let previousHash = head.hash;
    for (const [index, event] of events.entries()) {
      // Stored as canonical JSON, the form the hash covers, as on the embedded store.
      const chained = chainEvent(previousHash, {
        ...event,
        streamName,
        streamVersion: head.version + 1 + index,
      });
      previousHash = chained.hash;
      columns.ids.push(event.id);
      columns.types.push(event.type);
      columns.tenants.push(event.metadata.tenantId);
      stored.data.push(chained.data);
      stored.metadata.push(chained.metadata);
      stored.hashes.push(chained.hash);
    }
    // A named statement: each connection parses and plans it once, not on every append.
    const { rows } = await orUnavailable(
      pool.query<{ last: string }>({
        name: 'append_events',
        text: 'SELECT append_events($1, $2, $3, $4, $5, $6, $7, $8) AS last',
        values: [
          streamName,
          head.version,
          columns.ids,
          columns.types,
          columns.tenants,
          stored.data,
          stored.metadata,
          stored.hashes,
        ],
      }),
    );
    const version = head.version + events.length;
    know(streamName, version, previousHash);
    const lastPosition = Number(rows[0]!.last);
    const appended = {
      types: new Set(columns.types),
      firstPosition: lastPosition - events.length,
      lastPosition,
    };
    heard(appended);
    others.wake(appended);
    return { nextExpectedVersion: version, lastPosition };
  };

  /**
   * The newest safe head any read of this process has seen. Events at or below a safe head are final
   * (every one that will ever be visible is), so a read that stays below it needs no horizon.
   */
  let settled = 0;

  const pageOf = (rows: EventRow[], lastPosition: number, isEnd: boolean, behind: boolean): SourcePage => ({
    size: rows.length,
    decode: () => rows.map(toRecordedEvent),
    lastPosition,
    isEnd,
    behind,
  });

  /** A page below the horizon, with where the read got to (see ReadAllPage) and whether events wait. */
  const readPage = async ({
    after = 0,
    maxCount = 1000,
    filter,
  }: ReadAllOptions = {}): Promise<SourcePage> => {
    const upTo = settled;
    let settledRows: EventRow[] = [];
    if (after < upTo) {
      const page = orderedPage(
        { columns: eventColumns, where: 'e.position > $1 AND e.position <= $3', limit: '$2' },
        filter,
        4,
      );
      ({ rows: settledRows } = await query<EventRow>(page.sql, [after, maxCount, upTo, ...page.params]));
      if (settledRows.length === maxCount) {
        return pageOf(settledRows, Number(settledRows.at(-1)!.position), false, false);
      }
    }
    // The rest of the page, past what is settled, below a horizon.
    const from = Math.max(after, upTo);
    const page = orderedPage(
      {
        columns: eventColumns,
        from: ', horizon',
        where: 'e.position > $1 AND e.transaction_id < horizon.xmin',
        limit: '$2',
      },
      filter,
      3,
    );
    const { rows } = await query<Partial<EventRow> & { safe: string; visible: string }>(
      `WITH ${horizonCtes}, page AS (${page.sql})
       SELECT heads.safe, heads.visible, page.* FROM heads LEFT JOIN page ON true ORDER BY page.position`,
      [from, maxCount - settledRows.length, ...page.params],
    );
    const heads = rows[0]!;
    const safe = Number(heads.safe);
    settled = Math.max(settled, safe);
    const found = [...settledRows, ...(rows.filter((row) => row.position != null) as EventRow[])];
    const behind = Number(heads.visible) > safe;
    if (found.length === maxCount) return pageOf(found, Number(found.at(-1)!.position), false, behind);
    return pageOf(found, Math.max(from, safe), true, behind);
  };

  const store: EventStore = {
    kind: 'postgres',

    appendToStream: async (streamName, events, expectedVersion) => {
      if (events.length === 0) throw new Error('appendToStream needs at least one event');
      // A caller that expected any version (or any existing one) gets its append retried on a lost race.
      for (let attempt = 1; ; attempt += 1) {
        try {
          return await appendOnce(streamName, events, expectedVersion);
        } catch (error) {
          if (uniqueViolation(error, 'events_event_id_key')) {
            throw new ConflictError('An event with this id is already stored');
          }
          // The stream moved on since its head was read (append_events inserts after the version it saw).
          if (!uniqueViolation(error, 'events_stream_name_stream_version_key')) throw error;
          knownHeads.delete(streamName);
          const retry = expectedVersion === 'any' || expectedVersion === 'stream_exists';
          if (retry && attempt < 5) continue;
          throw new VersionConflictError(
            streamName,
            String(expectedVersion),
            await currentVersionOf(streamName),
          );
        }
      }
    },

    readStream: async (streamName, { fromVersion = 0, maxCount } = {}) => {
      const { rows } = await query<EventRow>(
        `SELECT ${eventColumns} FROM events e WHERE e.stream_name = $1 AND e.stream_version >= $2
         ORDER BY e.stream_version LIMIT $3`,
        [streamName, fromVersion, maxCount ?? null],
      );
      const events = rows.map(toRecordedEvent);
      const last = events.at(-1);
      if (last?.hash) know(streamName, last.streamVersion, last.hash);
      return events;
    },

    readAll: async (options) => {
      const { decode, lastPosition, isEnd } = await readPage(options);
      return { events: decode(), lastPosition, isEnd };
    },

    readTenantByStream: async function* (tenantId, { pageSize = 1000 } = {}) {
      // The (tenant_id, stream_name, stream_version) index in order; stream names sort by byte (COLLATE "C").
      for (let after = { streamName: '', version: -1 }; ;) {
        const { rows } = await query<EventRow>(
          `SELECT ${eventColumns} FROM events e
           WHERE e.tenant_id = $1 AND (e.stream_name, e.stream_version) > ($2, $3)
           ORDER BY e.stream_name, e.stream_version LIMIT $4`,
          [tenantId, after.streamName, after.version, pageSize],
        );
        if (rows.length > 0) yield rows.map(toRecordedEvent);
        const last = rows.at(-1);
        if (!last || rows.length < pageSize) return;
        after = { streamName: last.stream_name, version: last.stream_version };
      }
    },

    // Below the safe head, as readAll: an event above it may yet be joined by one an older writer commits.
    readAllBackward: async ({ before = Number.MAX_SAFE_INTEGER, maxCount = 1000, filter } = {}) => {
      const page = orderedPage(
        {
          columns: eventColumns,
          from: ', heads',
          where: 'e.position < $1 AND e.position <= heads.safe',
          limit: '$2',
          descending: true,
        },
        filter,
        3,
      );
      const { rows } = await query<EventRow>(`WITH ${horizonCtes} ${page.sql}`, [
        before,
        maxCount,
        ...page.params,
      ]);
      const events = rows.map(toRecordedEvent);
      const isStart = rows.length < maxCount;
      return { events, lastPosition: isStart ? 0 : events.at(-1)!.position, isStart };
    },

    headPosition: async () => {
      const { rows } = await query<{ safe: string }>(`WITH ${horizonCtes} SELECT safe FROM heads`);
      return Number(rows[0]?.safe ?? 0);
    },

    subscribe: (options, handler) => {
      listening();
      // Reads ahead: the server reads the next page while this process decodes and handles this one.
      return catchUp(
        {
          readPage,
          readsAhead: true,
          signal,
          pollMs,
          skipUnread: (appended, position, eventTypes) => commits.skip(appended, position, eventTypes),
        },
        options,
        handler,
      );
    },

    ...((): Pick<
      EventStore,
      | 'ensurePersistentSubscription'
      | 'subscribePersistent'
      | 'listParked'
      | 'replayParked'
      | 'groupCheckpoint'
    > => {
      const groups = consumerGroups({
        pool,
        signal,
        pollMs,
        claimTtlMs,
        ...(onClaimRenewalFailed ? { onClaimRenewalFailed } : {}),
      });
      return {
        ...groups,
        subscribePersistent: (group, handler, options) => {
          listening();
          return groups.subscribePersistent(group, handler, options);
        },
      };
    })(),

    // Every process may run every duty: consumer groups are shared, read models guarded per document.
    acquireLease: (_name, owner, ttlMs) =>
      Promise.resolve({ acquired: true, holder: owner, expiresAt: new Date(Date.now() + ttlMs) }),
    releaseLease: () => Promise.resolve(),

    ping: async () => {
      await query('SELECT 1');
    },

    close: async () => {
      signal.close();
      await others.close();
      await listener?.close();
      await handle.release();
    },
  };
  return store;
};
