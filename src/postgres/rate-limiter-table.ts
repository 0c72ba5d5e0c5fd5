import { RateLimiterPostgres } from 'rate-limiter-flexible';
import type { PoolOptions } from './client.js';
import { acquireMigrated } from './migrate.js';

/**
 * A table of rate-limiter-flexible's counters (RateLimiterPostgres) that every instance on the database
 * shares: the failed-authentication counters (src/auth/failure-store.ts) and the request rate limit's
 * windows (src/http/rate-limit-postgres.ts).
 */

/** The migration step of the table the library would make, but with a key of any length (its own is varchar(255)). */
export const rateLimiterTableStep = (table: string): string =>
  `CREATE TABLE ${table} (key text PRIMARY KEY, points integer NOT NULL DEFAULT 0, expire bigint);
   CREATE INDEX ${table}_by_expire ON ${table} (expire);`;

/** The library's options that are the policy's: what is counted, how much, for how many seconds. */
export interface CounterOptions {
  keyPrefix: string;
  points: number;
  duration: number;
  /** Refuse from memory, without a query, once a key has consumed this many points in its window. */
  inMemoryBlockOnConsumed?: number;
}

export interface RateLimiterTable {
  limiter(options: CounterOptions): RateLimiterPostgres;
  close(): Promise<void>;
}

/** How often ended counters are deleted: they count as absent anyway; this only keeps the table small. */
const sweepEveryMs = 5 * 60_000;

/** Migrates `component` to `schema` (whose steps make `table`), and sweeps the table until closed. */
export const openRateLimiterTable = async (
  url: string,
  options: PoolOptions,
  { component, table, schema }: { component: string; table: string; schema: readonly string[] },
): Promise<RateLimiterTable> => {
  const handle = await acquireMigrated(url, options, component, schema);
  // Our own timer (the library's would outlive close), cleared on close.
  const sweep = () =>
    handle.pool.query(`DELETE FROM ${table} WHERE expire <= $1`, [Date.now()]).catch(() => undefined);
  const timer = setInterval(() => void sweep(), sweepEveryMs);
  timer.unref();
  return {
    limiter: (counter) =>
      new RateLimiterPostgres({
        ...counter,
        storeClient: handle.pool,
        storeType: 'pool',
        tableName: table,
        tableCreated: true,
        clearExpiredByTimeout: false,
      }),
    close: async () => {
      clearInterval(timer);
      await handle.release();
    },
  };
};
