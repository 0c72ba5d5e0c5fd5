import Database from 'better-sqlite3';
import { join } from 'node:path';
import type { Config } from '../config.js';
import type { RecordedFingerprint } from './fingerprint.js';

/**
 * Where the fingerprints of the shared values are kept: beside the events, which hold what the secrets
 * sealed. Each write is a compare-and-set, so two processes starting at once agree on one record.
 */
export interface FingerprintStore {
  /** Where, for the log: `sqlite`, `postgres` or `mongodb`. */
  readonly kind: string;
  read(): Promise<RecordedFingerprint[]>;
  /** Records the first fingerprint of a setting; false when another process recorded one first. */
  insert(row: RecordedFingerprint): Promise<boolean>;
  /** Replaces the record if it still holds `expected`; false when another process changed it first. */
  replace(row: RecordedFingerprint, expected: string): Promise<boolean>;
  close(): Promise<void>;
}

interface Row {
  name: string;
  fingerprint: string;
  recorded_at: string;
  recorded_by: string;
}

const fromRow = (row: Row): RecordedFingerprint => ({
  name: row.name,
  fingerprint: row.fingerprint,
  recordedAt: row.recorded_at,
  recordedBy: row.recorded_by,
});

const tableSql = `CREATE TABLE IF NOT EXISTS settings_fingerprints (
  name        TEXT NOT NULL PRIMARY KEY,
  fingerprint TEXT NOT NULL,
  recorded_at TEXT NOT NULL,
  recorded_by TEXT NOT NULL
)`;

/**
 * In events.db, on a connection of its own (the event store's is busy with appends). `busyTimeoutMs` is how
 * long a call may wait for another process's write lock, blocking this one's event loop meanwhile.
 */
export const sqliteFingerprints = (file: string, { busyTimeoutMs = 5000 } = {}): FingerprintStore => {
  const db = new Database(file);
  db.pragma(`busy_timeout = ${busyTimeoutMs}`);
  db.exec(tableSql);
  const insert = db.prepare(
    `INSERT INTO settings_fingerprints (name, fingerprint, recorded_at, recorded_by)
      VALUES (@name, @fingerprint, @recordedAt, @recordedBy) ON CONFLICT (name) DO NOTHING`,
  );
  const replace = db.prepare(
    `UPDATE settings_fingerprints SET fingerprint = @fingerprint, recorded_at = @recordedAt, recorded_by = @recordedBy
      WHERE name = @name AND fingerprint = @expected`,
  );
  return {
    kind: 'sqlite',
    read: () =>
      Promise.resolve((db.prepare('SELECT * FROM settings_fingerprints').all() as Row[]).map(fromRow)),
    insert: (row) => Promise.resolve(insert.run(row).changes === 1),
    replace: (row, expected) => Promise.resolve(replace.run({ ...row, expected }).changes === 1),
    close: () => Promise.resolve(void db.close()),
  };
};

const postgresFingerprints = async (
  url: string,
  options: { poolSize: number },
): Promise<FingerprintStore> => {
  const { acquirePostgres, orUnavailable } = await import('../postgres/client.js');
  const { migrate } = await import('../postgres/migrate.js');
  const handle = acquirePostgres(url, options);
  const { pool } = handle;
  try {
    await orUnavailable(migrate(pool, 'fingerprints', [tableSql]));
  } catch (error) {
    await handle.release();
    throw error;
  }
  return {
    kind: 'postgres',
    read: async () =>
      (await orUnavailable(pool.query<Row>('SELECT * FROM settings_fingerprints'))).rows.map(fromRow),
    insert: async (row) =>
      (
        await orUnavailable(
          pool.query(
            `INSERT INTO settings_fingerprints (name, fingerprint, recorded_at, recorded_by) VALUES ($1, $2, $3, $4)
              ON CONFLICT (name) DO NOTHING`,
            [row.name, row.fingerprint, row.recordedAt, row.recordedBy],
          ),
        )
      ).rowCount === 1,
    replace: async (row, expected) =>
      (
        await orUnavailable(
          pool.query(
            `UPDATE settings_fingerprints SET fingerprint = $2, recorded_at = $3, recorded_by = $4
              WHERE name = $1 AND fingerprint = $5`,
            [row.name, row.fingerprint, row.recordedAt, row.recordedBy, expected],
          ),
        )
      ).rowCount === 1,
    close: () => handle.release(),
  };
};

/** A MongoDB collection: the natural place when the events are in EventStoreDB (EVENTSTORE_URL with MONGODB_URL). */
const mongoFingerprints = async (url: string): Promise<FingerprintStore> => {
  const { acquireMongo, orUnavailable } = await import('../mongodb/client.js');
  const { MongoServerError } = await import('mongodb');
  const handle = await acquireMongo(url);
  const collection = handle.db.collection<RecordedFingerprint & { _id: string }>('settings_fingerprints');
  return {
    kind: 'mongodb',
    read: async () =>
      (await orUnavailable(collection.find({}).toArray())).map(
        ({ name, fingerprint, recordedAt, recordedBy }) => ({ name, fingerprint, recordedAt, recordedBy }),
      ),
    insert: async (row) => {
      try {
        await orUnavailable(collection.insertOne({ _id: row.name, ...row }));
        return true;
      } catch (error) {
        // A duplicate key: another process recorded it first.
        if (error instanceof MongoServerError && error.code === 11000) return false;
        throw error;
      }
    },
    replace: async (row, expected) =>
      (await orUnavailable(collection.updateOne({ _id: row.name, fingerprint: expected }, { $set: row })))
        .matchedCount === 1,
    close: () => handle.release(),
  };
};

/**
 * The store beside the events: events.db, or PostgreSQL when it holds the events; with EventStoreDB, the
 * store every process shares besides it (MONGODB_URL, else DATABASE_URL). null: EventStoreDB alone, where
 * nothing else is shared (docs/operations.md says so).
 */
export const openFingerprintStore = async (
  config: Pick<Config, 'dataDir' | 'eventStoreUrl' | 'mongodbUrl' | 'databaseUrl' | 'databasePoolSize'>,
  sqlite: { busyTimeoutMs?: number } = {},
): Promise<FingerprintStore | null> => {
  const postgres = { poolSize: config.databasePoolSize };
  if (!config.eventStoreUrl) {
    return config.databaseUrl
      ? postgresFingerprints(config.databaseUrl, postgres)
      : sqliteFingerprints(join(config.dataDir, 'events.db'), sqlite);
  }
  if (config.mongodbUrl) return mongoFingerprints(config.mongodbUrl);
  if (config.databaseUrl) return postgresFingerprints(config.databaseUrl, postgres);
  return null;
};
