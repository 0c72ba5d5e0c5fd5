import { openSqliteFile } from '../core/sqlite-file.js';
import { sqliteBusyTimeoutMs } from '../core/sqlite-busy.js';
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
 * SQLite file DATA_DIR/limits.db (processes on one DATA_DIR), or the MongoDB collection or PostgreSQL table
 * `auth_failures` (instances on one database). Only this file knows the library.
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
  // Owner-only (openSqliteFile): the keys name e-mails and client addresses.
  const db = openSqliteFile(file);
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
  // Made: a login's count waits inside SQLite no longer than this; a file still busy then is a 503
  // (src/http/problem.ts), never an event loop held for seconds.
  db.pragma(`busy_timeout = ${sqliteBusyTimeoutMs}`);
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

export const openPostgresFailureStore = async (
  url: string,
  options: { poolSize?: number } = {},
): Promise<FailureLimiterStore> => {
  const { orUnavailable } = await import('../postgres/client.js');
  const { openRateLimiterTable, rateLimiterTableStep } = await import('../postgres/rate-limiter-table.js');
  // Keys longer than the library's 255 characters: an e-mail and more.
  const schema = [rateLimiterTableStep(table)];
  const counters = await openRateLimiterTable(url, options, { component: table, table, schema });
  return {
    limiter: (policy) => {
      const limiter = fromLibrary(counters.limiter(libraryOptions(policy)));
      // A server that cannot answer is a 503, as on the other routes.
      return {
        take: (key) => orUnavailable(limiter.take(key)),
        giveBack: (key) => orUnavailable(limiter.giveBack(key)),
        reset: (key) => orUnavailable(limiter.reset(key)),
      };
    },
    close: () => counters.close(),
  };
};

/**
 * Shared by every instance when MONGODB_URL or DATABASE_URL (always PostgreSQL) is set, MongoDB first as for
 * the read models; else DATA_DIR/limits.db.
 */
export const openFailureStore = async (config: {
  dataDir: string;
  mongodbUrl: string | null;
  databaseUrl?: string | null;
  databasePoolSize?: number;
}): Promise<FailureLimiterStore> => {
  if (config.mongodbUrl) return openMongoFailureStore(config.mongodbUrl);
  if (config.databaseUrl)
    return openPostgresFailureStore(config.databaseUrl, { poolSize: config.databasePoolSize });
  return openSqliteFailureStore(join(config.dataDir, 'limits.db'));
};
