import { randomUUID } from 'node:crypto';
import { UnavailableError } from '../core/errors.js';
import { orUnavailable, type PoolOptions } from '../postgres/client.js';
import { acquireMigrated } from '../postgres/migrate.js';
import { completedClaim, type IdempotencyStore } from './idempotency-store.js';

const schema = [
  `CREATE TABLE idempotency_keys (
     scope text NOT NULL,
     key text NOT NULL,
     token text NOT NULL,
     state text NOT NULL,
     expires_at bigint NOT NULL,
     fingerprint text,
     status integer,
     headers text,
     body bytea,
     PRIMARY KEY (scope, key)
   );
   CREATE INDEX idempotency_keys_by_expiry ON idempotency_keys (expires_at);`,
];

/**
 * A claim in one statement: insert a pending record, or take over one that expired; when neither happens,
 * the record as the statement found it. Another request's claim that commits while this statement runs
 * conflicts with the insert but is not in the statement's snapshot: then nothing comes back, and the claim
 * is asked again.
 */
const claimSql = `
  WITH claimed AS (
    INSERT INTO idempotency_keys AS k (scope, key, token, state, expires_at)
    VALUES ($1, $2, $3, 'pending', $4)
    ON CONFLICT (scope, key) DO UPDATE SET token = excluded.token, state = 'pending',
      expires_at = excluded.expires_at, fingerprint = NULL, status = NULL, headers = NULL, body = NULL
    WHERE k.expires_at <= $5
    RETURNING token
  )
  SELECT true AS claimed, NULL AS state, NULL::bigint AS expires_at, NULL AS fingerprint,
    NULL::integer AS status, NULL AS headers, NULL::bytea AS body
  FROM claimed
  UNION ALL
  SELECT false, state, expires_at, fingerprint, status, headers, body FROM idempotency_keys
  WHERE scope = $1 AND key = $2 AND NOT EXISTS (SELECT 1 FROM claimed)`;

interface ClaimRow {
  claimed: boolean;
  state: 'pending' | 'completed' | null;
  expires_at: string | null;
  fingerprint: string | null;
  status: number | null;
  headers: string | null;
  body: Buffer | null;
}

/** Expired records are deleted at most this often, on a claim. */
const purgeEveryMs = 60_000;

/**
 * Idempotency records in the PostgreSQL table `idempotency_keys`, shared by every instance on the
 * database. The primary key on (scope, key) makes a claim atomic; an expired record counts as absent and is
 * taken over by the same statement, so expiry is exact, and a purge on a claim now and then keeps the table
 * small.
 */
export const openPostgresIdempotencyStore = async (
  url: string,
  options: PoolOptions = {},
): Promise<IdempotencyStore> => {
  const handle = await acquireMigrated(url, options, 'idempotency', schema);
  const { pool } = handle;
  let purgedAt = 0;

  const claim: IdempotencyStore['claim'] = async ({ scope, key }, now, leaseUntil) => {
    if (now - purgedAt >= purgeEveryMs) {
      purgedAt = now;
      await orUnavailable(pool.query('DELETE FROM idempotency_keys WHERE expires_at <= $1', [now]));
    }
    // A few rounds at most: each lost round means another request changed the record in between.
    for (let round = 0; round < 5; round++) {
      const token = randomUUID();
      const { rows } = await orUnavailable(
        pool.query<ClaimRow>(claimSql, [scope, key, token, leaseUntil, now]),
      );
      const row = rows[0];
      if (row?.claimed) return { outcome: 'claimed', token };
      if (!row || Number(row.expires_at) <= now) continue;
      if (row.state === 'pending') return { outcome: 'in-flight' };
      return completedClaim(row);
    }
    throw new UnavailableError('The idempotency key is contended; retry');
  };

  return {
    kind: 'postgres',
    claim,
    complete: async ({ scope, key }, token, { fingerprint, response }, expiresAt) => {
      const { rowCount } = await orUnavailable(
        pool.query(
          `UPDATE idempotency_keys SET state = 'completed', expires_at = $1, fingerprint = $2, status = $3,
             headers = $4, body = $5
           WHERE scope = $6 AND key = $7 AND token = $8 AND state = 'pending'`,
          [
            expiresAt,
            fingerprint,
            response.status,
            JSON.stringify(response.headers),
            response.body,
            scope,
            key,
            token,
          ],
        ),
      );
      return rowCount === 1;
    },
    release: async ({ scope, key }, token) => {
      await orUnavailable(
        pool.query(
          `DELETE FROM idempotency_keys WHERE scope = $1 AND key = $2 AND token = $3 AND state = 'pending'`,
          [scope, key, token],
        ),
      );
    },
    ping: async () => {
      await orUnavailable(pool.query('SELECT 1'));
    },
    close: () => handle.release(),
  };
};
