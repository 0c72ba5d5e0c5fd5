import { randomUUID } from 'node:crypto';
import { openSqliteFile } from '../core/sqlite-file.js';
import { isSqliteBusy, sqliteBusyTimeoutMs, whenFree } from '../core/sqlite-busy.js';
import {
  completedClaim,
  type Claim,
  type CompletedRecord,
  type IdempotencyId,
  type IdempotencyStore,
} from './idempotency-store.js';

interface Row {
  token: string;
  state: 'pending' | 'completed';
  expires_at: number;
  fingerprint: string | null;
  status: number | null;
  headers: string | null;
  body: Buffer | null;
}

/** Expired records are deleted at most this often, on a claim. */
const purgeEveryMs = 60_000;

/**
 * Idempotency records in their own SQLite file (DATA_DIR/idempotency.db): nothing in them is derived from
 * the events, so they are kept apart from the read models, which may be rebuilt. A claim is one IMMEDIATE
 * transaction, so two processes on the same file cannot both claim a key.
 */
export const openSqliteIdempotencyStore = (file: string): IdempotencyStore => {
  // A kept answer is sealed, but its status, headers and request fingerprint are nobody else's business.
  // Losing the last records in a power cut only makes a retry run again, as it would without a key.
  const db = openSqliteFile(file);
  db.exec(`
    CREATE TABLE IF NOT EXISTS idempotency_keys (
      scope TEXT NOT NULL,
      key TEXT NOT NULL,
      token TEXT NOT NULL,
      state TEXT NOT NULL,
      expires_at INTEGER NOT NULL,
      fingerprint TEXT,
      status INTEGER,
      headers TEXT,
      body BLOB,
      PRIMARY KEY (scope, key)
    ) WITHOUT ROWID;
    CREATE INDEX IF NOT EXISTS idempotency_keys_by_expiry ON idempotency_keys (expires_at);`);

  const select = db.prepare<[string, string], Row>(
    'SELECT token, state, expires_at, fingerprint, status, headers, body FROM idempotency_keys WHERE scope = ? AND key = ?',
  );
  const upsertPending = db.prepare<[string, string, string, number]>(
    `INSERT INTO idempotency_keys (scope, key, token, state, expires_at) VALUES (?, ?, ?, 'pending', ?)
     ON CONFLICT (scope, key) DO UPDATE SET token = excluded.token, state = 'pending',
       expires_at = excluded.expires_at, fingerprint = NULL, status = NULL, headers = NULL, body = NULL`,
  );
  const completeClaim = db.prepare<[number, string, number, string, Buffer, string, string, string]>(
    `UPDATE idempotency_keys SET state = 'completed', expires_at = ?, fingerprint = ?, status = ?, headers = ?, body = ?
     WHERE scope = ? AND key = ? AND token = ? AND state = 'pending'`,
  );
  const releaseClaim = db.prepare<[string, string, string]>(
    `DELETE FROM idempotency_keys WHERE scope = ? AND key = ? AND token = ? AND state = 'pending'`,
  );
  const purge = db.prepare<[number]>('DELETE FROM idempotency_keys WHERE expires_at <= ?');
  let purgedAt = 0;
  // Made: a claim on the request path waits inside SQLite no longer than this, then retries with timers.
  db.pragma(`busy_timeout = ${sqliteBusyTimeoutMs}`);

  const claim = db.transaction(({ scope, key }: IdempotencyId, now: number, leaseUntil: number): Claim => {
    const row = select.get(scope, key);
    if (row && row.expires_at > now) {
      if (row.state === 'pending') return { outcome: 'in-flight' };
      return completedClaim(row);
    }
    const token = randomUUID();
    upsertPending.run(scope, key, token, leaseUntil);
    return { outcome: 'claimed', token };
  });

  return {
    kind: 'sqlite',
    claim: async (id, now, leaseUntil) => {
      if (now - purgedAt >= purgeEveryMs) {
        purgedAt = now;
        try {
          purge.run(now);
        } catch (error) {
          // Only housekeeping: a busy file leaves it to the next claim, which must not wait for it.
          if (!isSqliteBusy(error)) throw error;
          purgedAt = 0;
        }
      }
      return whenFree(() => claim.immediate(id, now, leaseUntil));
    },
    complete: async ({ scope, key }, token, record: CompletedRecord, expiresAt) => {
      const { fingerprint, response } = record;
      const { changes } = await whenFree(() =>
        completeClaim.run(
          expiresAt,
          fingerprint,
          response.status,
          JSON.stringify(response.headers),
          response.body,
          scope,
          key,
          token,
        ),
      );
      return changes === 1;
    },
    release: async ({ scope, key }, token) => {
      await whenFree(() => releaseClaim.run(scope, key, token));
    },
    ping: () => {
      db.prepare('SELECT 1').get();
      return Promise.resolve();
    },
    close: () => {
      db.close();
      return Promise.resolve();
    },
  };
};
