import Database from 'better-sqlite3';
import { watch, type FSWatcher } from 'node:fs';
import { basename, dirname, resolve } from 'node:path';
import type { ExpectedVersion, NewEvent } from '../core/events.js';
import { NO_STREAM, satisfiesExpected } from '../core/events.js';
import { asError, ConflictError, VersionConflictError } from '../core/errors.js';
import { ownerOnlyDatabase } from '../core/private-files.js';
import type { AppendResult, EventStore, ReadAllOptions, ReadAllPage } from './port.js';
import { catchUp } from './catch-up-engine.js';
import { localCatchUpSource } from './sqlite-catch-up.js';
import { persistentSubscriptions } from './sqlite-persistent.js';
import { AppendSignal, CommitJournal, defaultPollMs } from './append-signal.js';
import { sqliteLeases } from './sqlite-leases.js';
import { toRecordedEvent, type EventRow } from './event-rows.js';
import { chainUnhashedEvents, filterClause, schema } from './sqlite-schema.js';
import { chainEvent, genesisHash } from './hash-chain.js';
import {
  busyBudgetMs,
  sqliteBusyTimeoutMs,
  sqliteOpeningBusyTimeoutMs,
  whenFree,
} from '../core/sqlite-busy.js';

const describeExpected = (expected: ExpectedVersion): string => String(expected);

/**
 * Appends by another process on the same file (the CLI beside a running service) change the WAL file;
 * inotify usually tells us, and idle subscribers wake up early. Bursts are coalesced, so a busy store reads
 * no more. This process's own commits change the WAL too (and its bookkeeping's): `foreignHead` looks at
 * the head once, and only a head beyond this process's last commit wakes every subscriber to read. It is
 * only a shortcut: subscribers also poll, so a change inotify misses waits one interval.
 */
const watchOtherWriters = (file: string, signal: AppendSignal, foreignHead: () => boolean): FSWatcher => {
  const wal = `${basename(file)}-wal`;
  let pending: NodeJS.Timeout | null = null;
  const watcher = watch(dirname(resolve(file)), (_event, name) => {
    if (name !== wal || pending) return;
    pending = setTimeout(() => {
      pending = null;
      if (foreignHead()) signal.notify();
    }, 20);
    pending.unref();
  });
  watcher.unref();
  return watcher;
};

const isUniqueViolation = (error: unknown): error is InstanceType<typeof Database.SqliteError> =>
  error instanceof Database.SqliteError && error.code.startsWith('SQLITE_CONSTRAINT');

export interface SqliteEventStoreOptions {
  /** The longest an idle subscriber waits before it reads again (appends by other processes). */
  pollMs?: number;
}

/**
 * The consumer groups' checkpoints, retries and parked events, and the leases, on a connection of their own
 * to the same file that does not sync each commit (synchronous = NORMAL): a commit survives a killed process,
 * and a power cut may undo the last few, which only delivers their events again (consumers are at least
 * once, docs/architecture.md). Syncing them cost a create about 2 ms of event loop per consumer group. The
 * events themselves are committed on the FULL connection, and each of their commits syncs the WAL.
 */
const openBookkeeping = (file: string): Database.Database => {
  const bookkeeping = new Database(file);
  bookkeeping.pragma(`busy_timeout = ${sqliteOpeningBusyTimeoutMs}`);
  bookkeeping.pragma('synchronous = NORMAL');
  return bookkeeping;
};

/**
 * The embedded event store: one SQLite file in WAL mode. The `position` column is the global commit
 * order; (stream_name, stream_version) is unique, which is what makes the expected-version check safe even
 * against another process writing the same file.
 */
export const openSqliteEventStore = (
  file: string,
  { pollMs = defaultPollMs }: SqliteEventStoreOptions = {},
): EventStore => {
  ownerOnlyDatabase(file);
  const db = new Database(file);
  db.pragma('journal_mode = WAL');
  // FULL syncs the WAL on every commit: an acknowledged append survives a crash of the process or the machine.
  db.pragma('synchronous = FULL');
  db.pragma(`busy_timeout = ${sqliteOpeningBusyTimeoutMs}`);
  db.exec(schema);
  chainUnhashedEvents(db);
  const bookkeeping = openBookkeeping(file);

  const signal = new AppendSignal();
  const journal = new CommitJournal();
  // Commits are synchronous and recorded in the journal before any timer runs: a head beyond both this
  // process's last commit and the head seen last time is another process's news. A closed store has none.
  let seenHead = 0;
  const watcher = watchOtherWriters(file, signal, () => {
    if (!db.open) return false;
    const head = headPositionNow();
    const news = head > Math.max(seenHead, journal.lastPosition);
    seenHead = Math.max(seenHead, head);
    return news;
  });
  const statements = new Map<string, Database.Statement>();
  const prepare = (sql: string): Database.Statement => {
    let statement = statements.get(sql);
    if (!statement) {
      statement = db.prepare(sql);
      statements.set(sql, statement);
    }
    return statement;
  };

  /** The stream's last version and hash: what the next append checks against and chains to. */
  const headOf = (streamName: string): { version: number; hash: string } => {
    const row = prepare(
      'SELECT stream_version AS version, hash FROM events WHERE stream_name = ? ORDER BY stream_version DESC LIMIT 1',
    ).get(streamName) as { version: number; hash: string | null } | undefined;
    return row
      ? { version: row.version, hash: row.hash ?? genesisHash }
      : { version: NO_STREAM, hash: genesisHash };
  };

  const currentVersionOf = (streamName: string): number => {
    const row = prepare('SELECT max(stream_version) AS version FROM events WHERE stream_name = ?').get(
      streamName,
    ) as {
      version: number | null;
    };
    return row.version ?? NO_STREAM;
  };

  const insertEvent = db.prepare(
    `INSERT INTO events (event_id, stream_name, stream_version, event_type, tenant_id, data, metadata, hash)
     VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
  );

  const append = db.transaction(
    (streamName: string, events: readonly NewEvent[], expected: ExpectedVersion): AppendResult => {
      const head = headOf(streamName);
      if (!satisfiesExpected(expected, head.version)) {
        throw new VersionConflictError(streamName, describeExpected(expected), head.version);
      }
      let version = head.version;
      let previousHash = head.hash;
      let lastPosition = 0;
      for (const event of events) {
        version += 1;
        // Stored as canonical JSON, the form the hash covers: verifying it back is then cheap.
        const chained = chainEvent(previousHash, { ...event, streamName, streamVersion: version });
        previousHash = chained.hash;
        const result = insertEvent.run(
          event.id,
          streamName,
          version,
          event.type,
          event.metadata.tenantId,
          chained.data,
          chained.metadata,
          previousHash,
        );
        lastPosition = Number(result.lastInsertRowid);
      }
      return { nextExpectedVersion: version, lastPosition };
    },
  );

  /**
   * Group commit: the appends requested while the event loop runs one phase are written in one transaction,
   * so they share one fsync. Each keeps its own expected-version check in a savepoint of its own; one that
   * fails is rolled back alone and rejected, the others commit. Nothing resolves before the commit.
   */
  interface PendingAppend {
    streamName: string;
    events: readonly NewEvent[];
    expectedVersion: ExpectedVersion;
    resolve: (result: AppendResult) => void;
    reject: (error: Error) => void;
  }
  let pending: PendingAppend[] = [];

  const appendOne = (request: PendingAppend): AppendResult | Error => {
    try {
      return append(request.streamName, request.events, request.expectedVersion);
    } catch (error) {
      // A full disk or an I/O error may have rolled the whole batch back: then nothing of it is written, and
      // every append after this one would commit on its own. The batch fails as one.
      if (!db.inTransaction) throw error;
      if (!isUniqueViolation(error)) return asError(error);
      // The same event id twice, or (from another process) the same stream version.
      return error.message.includes('event_id')
        ? new ConflictError('An event with this id is already stored')
        : new VersionConflictError(
            request.streamName,
            describeExpected(request.expectedVersion),
            currentVersionOf(request.streamName),
          );
    }
  };

  const headPositionNow = (): number =>
    (prepare('SELECT coalesce(max(position), 0) AS head FROM events').get() as { head: number }).head;

  // The head before the batch is what tells subscribers which positions are this commit's (CommitJournal).
  const appendAll = db.transaction((batch: PendingAppend[]) => ({
    firstPosition: headPositionNow(),
    outcomes: batch.map(appendOne),
  }));

  /**
   * Batches commit one after the other, in the order they formed; each retries while another process holds
   * the write lock, with timers, until its time is up (src/core/sqlite-busy.ts), then fails with a 503.
   */
  let committing: Promise<void> = Promise.resolve();
  const flush = () => {
    const batch = pending;
    pending = [];
    const deadline = Date.now() + busyBudgetMs;
    // Never a rejected chain: a batch that failed in an unforeseen way must not stop the batches after it.
    committing = committing
      .then(() => commitBatch(batch, deadline))
      .catch((error: unknown) => {
        for (const request of batch) request.reject(asError(error));
      });
  };

  const commitBatch = async (batch: PendingAppend[], deadline: number): Promise<void> => {
    let committed: { firstPosition: number; outcomes: (AppendResult | Error)[] };
    try {
      committed = await whenFree(() => appendAll.immediate(batch), deadline);
    } catch (error) {
      for (const request of batch) request.reject(asError(error));
      return;
    }
    const types = new Set<string>();
    let lastPosition = 0;
    batch.forEach((request, index) => {
      const outcome = committed.outcomes[index]!;
      if (outcome instanceof Error) return request.reject(outcome);
      for (const event of request.events) types.add(event.type);
      lastPosition = Math.max(lastPosition, outcome.lastPosition);
      request.resolve(outcome);
    });
    if (lastPosition === 0) return;
    const appended = { types, firstPosition: committed.firstPosition, lastPosition };
    journal.record(appended);
    signal.notify(appended);
  };

  // One deferred transaction, so that the page and the head it is compared with come from the same snapshot.
  const readAllNow = db.transaction(
    ({ after = 0, maxCount = 1000, filter }: ReadAllOptions = {}): ReadAllPage => {
      const clause = filterClause(filter);
      const rows = prepare(
        `SELECT * FROM events WHERE position > ?${clause.sql} ORDER BY position LIMIT ?`,
      ).all(after, ...clause.params, maxCount) as EventRow[];
      const events = rows.map(toRecordedEvent);
      if (rows.length === maxCount) {
        return { events, lastPosition: events[events.length - 1]?.position ?? after, isEnd: false };
      }
      return { events, lastPosition: Math.max(after, headPositionNow()), isEnd: true };
    },
  );

  /**
   * Where a tenant's streams are in the (stream_name, stream_version) index: its names are
   * `<category>-<tenantId>_<id>` (src/core/streams.ts), so one range per category, found by skipping from
   * one category to the next (a handful of index seeks). Used only when the ranges hold exactly as many
   * events as the tenant has (two counts over covering indexes); otherwise the whole index, every tenant's
   * streams, so that an event under an unexpected name is still read.
   */
  const tenantStreamRanges = (tenantId: string): { from: string; below?: string }[] => {
    const first = prepare(
      'SELECT stream_name FROM events WHERE stream_name >= ? ORDER BY stream_name LIMIT 1',
    );
    const ranges: { from: string; below: string }[] = [];
    for (let from = ''; ;) {
      const row = first.get(from) as { stream_name: string } | undefined;
      if (!row) break;
      const dash = row.stream_name.indexOf('-');
      if (dash < 0) {
        from = `${row.stream_name}\u0000`;
        continue;
      }
      const category = row.stream_name.slice(0, dash);
      // '`' and '.' are the characters just after '_' and '-': past the tenant's names, past the category's.
      ranges.push({ from: `${category}-${tenantId}_`, below: `${category}-${tenantId}\`` });
      from = `${category}.`;
    }
    const count = (sql: string, ...params: string[]) => (prepare(sql).get(...params) as { n: number }).n;
    const inRanges = ranges.reduce(
      (sum, range) =>
        sum +
        count(
          'SELECT count(*) AS n FROM events WHERE stream_name >= ? AND stream_name < ?',
          range.from,
          range.below,
        ),
      0,
    );
    const tenants = count('SELECT count(*) AS n FROM events WHERE tenant_id = ?', tenantId);
    return inRanges === tenants ? ranges : [{ from: '' }];
  };

  const source = { readAll: readAllNow, signal, journal, pollMs };
  const catchUpSource = localCatchUpSource(source);
  const leases = sqliteLeases(bookkeeping);
  const store: EventStore = {
    kind: 'sqlite',

    appendToStream: (streamName, events, expectedVersion) => {
      if (events.length === 0) return Promise.reject(new Error('appendToStream needs at least one event'));
      return new Promise<AppendResult>((resolve, reject) => {
        pending.push({ streamName, events, expectedVersion, resolve, reject });
        if (pending.length === 1) setImmediate(flush);
      });
    },

    readStream: (streamName, { fromVersion = 0, maxCount = -1 } = {}) => {
      const rows = prepare(
        'SELECT * FROM events WHERE stream_name = ? AND stream_version >= ? ORDER BY stream_version LIMIT ?',
      ).all(streamName, fromVersion, maxCount) as EventRow[];
      return Promise.resolve(rows.map(toRecordedEvent));
    },

    readAll: (options) => Promise.resolve(readAllNow(options)),

    readAllBackward: ({ before = Number.MAX_SAFE_INTEGER, maxCount = 1000, filter } = {}) => {
      const clause = filterClause(filter);
      const rows = prepare(
        `SELECT * FROM events WHERE position < ?${clause.sql} ORDER BY position DESC LIMIT ?`,
      ).all(before, ...clause.params, maxCount) as EventRow[];
      const events = rows.map(toRecordedEvent);
      const isStart = rows.length < maxCount;
      return Promise.resolve({ events, lastPosition: isStart ? 0 : events.at(-1)!.position, isStart });
    },

    // The (stream_name, stream_version) index in order, each page resumed after the last row of the one
    // before; the unary plus keeps SQLite off the tenant index, which would sort the tenant for every page.
    readTenantByStream: async function* (tenantId, { pageSize = 1000 } = {}) {
      for (const range of tenantStreamRanges(tenantId)) {
        const page = prepare(
          `SELECT * FROM events WHERE (stream_name, stream_version) > (?, ?)${range.below === undefined ? '' : ' AND stream_name < ?'}
           AND +tenant_id = ? ORDER BY stream_name, stream_version LIMIT ?`,
        );
        for (let after = { streamName: range.from, version: -1 }; ;) {
          const bounds = range.below === undefined ? [] : [range.below];
          const rows = page.all(after.streamName, after.version, ...bounds, tenantId, pageSize) as EventRow[];
          if (rows.length > 0) yield rows.map(toRecordedEvent);
          const last = rows.at(-1);
          if (!last || rows.length < pageSize) break;
          after = { streamName: last.stream_name, version: last.stream_version };
          // Each page is read synchronously: the rest of the process gets a turn between pages.
          await new Promise((resolve) => setImmediate(resolve));
        }
      }
    },

    headPosition: () => Promise.resolve(headPositionNow()),

    subscribe: (options, handler) => catchUp(catchUpSource, options, handler),

    ...persistentSubscriptions(bookkeeping, source, leases.checkFence),

    acquireLease: leases.acquireLease,
    releaseLease: leases.releaseLease,

    ping: () => {
      prepare('SELECT 1').get();
      return Promise.resolve();
    },

    close: async () => {
      watcher.close();
      signal.close();
      await committing;
      bookkeeping.close();
      db.close();
    },
  };
  // The schema is made: from now on no call waits on another process's lock for longer than this.
  for (const connection of [db, bookkeeping]) connection.pragma(`busy_timeout = ${sqliteBusyTimeoutMs}`);
  return store;
};
