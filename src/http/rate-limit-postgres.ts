import { RateLimiterPostgres } from 'rate-limiter-flexible';
import { acquirePostgres, orUnavailable, type PoolOptions } from '../postgres/client.js';
import { migrate } from '../postgres/migrate.js';
import { fromLibrary, libraryOptions, type RequestWindows } from './rate-limit.js';

const table = 'request_rate_limits';

/**
 * Step 1 was the hand-written windows' table; instances of that release may still count in it during a
 * rolling upgrade, so it is left for a later step to drop. Step 2 is the library's table with a key of any
 * length (the library's own is varchar(255); a principal is longer).
 */
const schema = [
  `CREATE TABLE request_rate_windows (key text PRIMARY KEY, count integer NOT NULL, reset_at bigint NOT NULL);
   CREATE INDEX request_rate_windows_by_reset ON request_rate_windows (reset_at);`,
  `CREATE TABLE ${table} (key text PRIMARY KEY, points integer NOT NULL DEFAULT 0, expire bigint);
   CREATE INDEX ${table}_by_expire ON ${table} (expire);`,
];

/** How often ended windows are deleted: they count as absent anyway; this only keeps the table small. */
const sweepEveryMs = 5 * 60_000;

/**
 * The request rate limit's windows in the PostgreSQL table `request_rate_limits` (rate-limiter-flexible's
 * RateLimiterPostgres), shared by every instance on the database, so that RATE_LIMIT holds for the service
 * as a whole. Each request costs one upsert on a short row, until its key is over the limit: then the
 * instance refuses it from memory until the window ends. The windows follow the processes' clocks, so the
 * instances' clocks must agree to within a small part of a window, as NTP keeps them.
 */
export const openPostgresRequestWindows = async (
  url: string,
  options: PoolOptions = {},
): Promise<RequestWindows> => {
  const handle = acquirePostgres(url, options);
  try {
    await migrate(handle.pool, 'request_rate_windows', schema);
  } catch (error) {
    await handle.release();
    throw error;
  }
  // Our own timer (the library's would outlive close), cleared on close.
  const sweep = () =>
    handle.pool.query(`DELETE FROM ${table} WHERE expire <= $1`, [Date.now()]).catch(() => undefined);
  const timer = setInterval(() => void sweep(), sweepEveryMs);
  timer.unref();
  return {
    limiter: (policy) => {
      const limiter = fromLibrary(
        new RateLimiterPostgres({
          ...libraryOptions(policy),
          storeClient: handle.pool,
          storeType: 'pool',
          tableName: table,
          tableCreated: true,
          clearExpiredByTimeout: false,
          inMemoryBlockOnConsumed: policy.limit + 1,
        }),
      );
      // A server that cannot answer is a 503, as on the other routes.
      return { hit: (key) => orUnavailable(limiter.hit(key)) };
    },
    close: async () => {
      clearInterval(timer);
      await handle.release();
    },
  };
};
