import { acquirePostgres, orUnavailable, type PoolOptions } from '../postgres/client.js';
import { migrate } from '../postgres/migrate.js';
import type { RequestWindows } from './rate-limit.js';

const schema = [
  `CREATE TABLE request_rate_windows (key text PRIMARY KEY, count integer NOT NULL, reset_at bigint NOT NULL);
   CREATE INDEX request_rate_windows_by_reset ON request_rate_windows (reset_at);`,
];

/**
 * One request counted in one statement: a window that ended starts again at 1 from `now`. All SET
 * expressions read the row as it was, so both columns see the same old window.
 */
const hitSql = `
  INSERT INTO request_rate_windows AS w (key, count, reset_at) VALUES ($1, 1, $2::bigint + $3::bigint)
  ON CONFLICT (key) DO UPDATE SET
    count = CASE WHEN w.reset_at <= $2::bigint THEN 1 ELSE w.count + 1 END,
    reset_at = CASE WHEN w.reset_at <= $2::bigint THEN $2::bigint + $3::bigint ELSE w.reset_at END
  RETURNING count, reset_at`;

/** How often windows that ended are deleted: they count as absent anyway; this only keeps the table small. */
const sweepEveryMs = 5 * 60_000;

/**
 * The request rate limit's windows in the PostgreSQL table `request_rate_windows`, shared by every
 * instance on the database, so that RATE_LIMIT holds for the service as a whole rather than per instance.
 * Each request costs one upsert on a short row. The windows follow the service's clock (`now`), so the
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
  // By the service's clock, as the windows are: the last `now` a request brought.
  let lastNow = 0;
  const sweep = () =>
    handle.pool
      .query('DELETE FROM request_rate_windows WHERE reset_at <= $1', [lastNow])
      .catch(() => undefined);
  const timer = setInterval(() => void sweep(), sweepEveryMs);
  timer.unref();
  return {
    hit: async (key, now, windowMs) => {
      lastNow = now;
      const { rows } = await orUnavailable(
        handle.pool.query<{ count: number; reset_at: string }>(hitSql, [key, now, windowMs]),
      );
      const row = rows[0]!;
      return { count: row.count, resetAt: Number(row.reset_at) };
    },
    close: async () => {
      clearInterval(timer);
      await handle.release();
    },
  };
};
