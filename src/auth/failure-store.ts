import Database from 'better-sqlite3';
import { ownerOnlyDatabase } from '../core/private-files.js';
import { join } from 'node:path';
import {
  RateLimiterMongo,
  RateLimiterRes,
  RateLimiterSQLite,
  type RateLimiterStoreAbstract,
} from 'rate-limiter-flexible';
import type { FailureLimiter, FailureLimiterStore, FailurePolicy } from './rate-limit.js';

/**
 * The failed-authentication counters, kept by rate-limiter-flexible in a store every process shares: the
 * SQLite file DATA_DIR/limits.db (processes on one DATA_DIR), or the MongoDB collection `auth_failures`
 * (instances on one database). Only this file knows the library.
 */
const fromLibrary = (limiter: RateLimiterStoreAbstract): FailureLimiter => ({
  take: async (key) => {
    try {
      await limiter.consume(key);
      return 0;
    } catch (rejection) {
      // consume rejects with the RateLimiterRes once the points are spent, and with an Error when the store fails.
      if (rejection instanceof RateLimiterRes) return Math.max(1, rejection.msBeforeNext);
      throw rejection;
    }
  },
  giveBack: async (key) => {
    await limiter.reward(key);
  },
  reset: async (key) => {
    await limiter.delete(key);
  },
});

const libraryOptions = (policy: FailurePolicy) => ({
  keyPrefix: policy.name,
  points: policy.max,
  duration: Math.ceil(policy.windowMs / 1000),
});

const table = 'auth_failures';

export const openSqliteFailureStore = (file: string): FailureLimiterStore => {
  // Owner-only before SQLite opens it: the keys name e-mails and client addresses.
  ownerOnlyDatabase(file);
  const db = new Database(file);
  db.pragma('journal_mode = WAL');
  db.pragma('synchronous = NORMAL');
  db.pragma('busy_timeout = 5000');
  db.exec(
    `CREATE TABLE IF NOT EXISTS ${table} (key TEXT PRIMARY KEY, points INTEGER NOT NULL DEFAULT 0, expire INTEGER)`,
  );
  // Expired counters are ignored on read; this only keeps the file small. Our own timer, cleared on close.
  const sweep = () => {
    try {
      db.prepare(`DELETE FROM ${table} WHERE expire < ?`).run(Date.now());
    } catch {
      // A busy or full store: the next sweep tries again, and nothing depends on this one.
    }
  };
  sweep();
  const timer = setInterval(sweep, 5 * 60_000);
  timer.unref();
  return {
    limiter: (policy) =>
      fromLibrary(
        new RateLimiterSQLite({
          ...libraryOptions(policy),
          storeClient: db,
          storeType: 'better-sqlite3',
          tableName: table,
          tableCreated: true,
        }),
      ),
    close: () => {
      clearInterval(timer);
      db.close();
      return Promise.resolve();
    },
  };
};

export const openMongoFailureStore = async (url: string): Promise<FailureLimiterStore> => {
  const { acquireMongo, databaseName } = await import('../mongodb/client.js');
  const mongo = await acquireMongo(url);
  return {
    limiter: (policy) =>
      fromLibrary(
        new RateLimiterMongo({
          ...libraryOptions(policy),
          storeClient: mongo.client,
          dbName: databaseName(url),
          tableName: table,
        }),
      ),
    close: () => mongo.release(),
  };
};

/** MongoDB when MONGODB_URL is set (shared by every instance), else DATA_DIR/limits.db. */
export const openFailureStore = async (config: {
  dataDir: string;
  mongodbUrl: string | null;
}): Promise<FailureLimiterStore> =>
  config.mongodbUrl
    ? openMongoFailureStore(config.mongodbUrl)
    : openSqliteFailureStore(join(config.dataDir, 'limits.db'));
