import { orUnavailable, type PoolOptions } from '../postgres/client.js';
import { openRateLimiterTable, rateLimiterTableStep } from '../postgres/rate-limiter-table.js';
import { fromLibrary, libraryOptions, type RequestWindows } from './rate-limit.js';

const table = 'request_rate_limits';

/**
 * Step 1 was the hand-written windows' table, left while instances of that release could still count in it
 * during a rolling upgrade. Step 2 is the library's table. Step 3 drops step 1's table: every instance older
 * than the change to rate-limiter-flexible must be gone before it runs (a rolling upgrade from such a
 * release goes through the release before this one), or those instances fail on the missing table.
 */
const schema = [
  `CREATE TABLE request_rate_windows (key text PRIMARY KEY, count integer NOT NULL, reset_at bigint NOT NULL);
   CREATE INDEX request_rate_windows_by_reset ON request_rate_windows (reset_at);`,
  rateLimiterTableStep(table),
  'DROP TABLE IF EXISTS request_rate_windows',
];

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
  const counters = await openRateLimiterTable(url, options, {
    component: 'request_rate_windows',
    table,
    schema,
  });
  return {
    limiter: (policy) => {
      const limiter = fromLibrary(
        counters.limiter({ ...libraryOptions(policy), inMemoryBlockOnConsumed: policy.limit + 1 }),
      );
      // A server that cannot answer is a 503, as on the other routes.
      return { hit: (key) => orUnavailable(limiter.hit(key)) };
    },
    close: () => counters.close(),
  };
};
