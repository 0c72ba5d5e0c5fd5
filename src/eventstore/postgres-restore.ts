import type { Pool } from 'pg';
import { inTransaction } from '../postgres/client.js';

/**
 * Events restored from a logical dump (pg_dump) into another cluster keep the transaction ids of the old
 * one, which may lie ahead of this cluster's: readers would not see them until its counter passed them,
 * years later. No event written here can have an id at or past the next one to be assigned, so such ids
 * mark restored history: it is all committed, and goes below any horizon (0). Checked on the newest event
 * only, so a start costs one row; the first start after a restore, before any append, repairs them all.
 */
export const adoptRestoredEvents = async (pool: Pool): Promise<number> => {
  const { rows } = await pool.query<{ ahead: boolean }>(
    `SELECT transaction_id >= pg_snapshot_xmax(pg_current_snapshot()) AS ahead
     FROM events ORDER BY position DESC LIMIT 1`,
  );
  if (!rows[0]?.ahead) return 0;
  // Once per restore, over as many events as it holds: no statement time-out for it.
  const { rowCount } = await inTransaction(
    pool,
    (client) =>
      client.query(
        `UPDATE events SET transaction_id = '0'::xid8 WHERE transaction_id >= pg_snapshot_xmax(pg_current_snapshot())`,
      ),
    { unbounded: true },
  );
  return rowCount ?? 0;
};
