/**
 * The idempotency-record port: one record per (scope, key), where the scope is a tenant and a credential
 * and the key is the client's Idempotency-Key. The store keeps what it is given: the middleware
 * (./idempotency.ts) hands it fingerprints that are HMACs and bodies already sealed (./idempotency-seal.ts). A record is first a `pending` claim (a request with the key
 * is in flight) and then `completed` with the response to replay. Adapters: embedded SQLite
 * (./idempotency-store-sqlite.ts), PostgreSQL (./idempotency-store-postgres.ts) and MongoDB
 * (./idempotency-store-mongo.ts); each must pass test/contract/idempotency-store.contract.ts.
 */

/**
 * How much of a claim's lease its request may spend before its first append (src/http/idempotency.ts,
 * writeGuard): the rest is for that append to commit before another request may claim the key.
 */
export const writableShareOfLease = 3 / 4;

export interface IdempotencyId {
  /** The tenant and the credential, e.g. `t_acme|apikey:k_01…`. */
  scope: string;
  /** The Idempotency-Key header: 1..255 printable ASCII characters. */
  key: string;
}

/** A response as it is replayed: status, the headers worth replaying, and the body's bytes (stored sealed). */
export interface StoredResponse {
  status: number;
  headers: Record<string, string>;
  body: Buffer;
}

export interface CompletedRecord {
  /**
   * HMAC-SHA-256 (hex) of what the first request was: the matched route and its parameters, the query, the
   * credential's identity and exact scopes, and the raw body.
   */
  fingerprint: string;
  response: StoredResponse;
}

/** A completed record's columns as the SQL adapters keep them (headers as JSON text). */
export interface CompletedColumns {
  fingerprint: string | null;
  status: number | null;
  headers: string | null;
  body: Buffer | null;
}

/** The claim that a completed row answers: its response, to replay. */
export const completedClaim = (row: CompletedColumns): Claim => ({
  outcome: 'completed',
  record: {
    fingerprint: row.fingerprint!,
    response: {
      status: row.status!,
      headers: JSON.parse(row.headers!) as Record<string, string>,
      body: row.body ?? Buffer.alloc(0),
    },
  },
});

export type Claim =
  /** Nobody holds the key (or its record expired): the caller holds it now, under `token`. */
  | { outcome: 'claimed'; token: string }
  /** Another request holds the key and has not finished. */
  | { outcome: 'in-flight' }
  /** A request with the key finished: replay its response, or refuse a different request. */
  | { outcome: 'completed'; record: CompletedRecord };

export interface IdempotencyStore {
  readonly kind: 'sqlite' | 'mongodb' | 'postgres';
  /**
   * Claims the key atomically, also across processes sharing the store. A record whose `expiresAt` is at
   * or before `now` counts as absent. A new claim is pending until `leaseUntil` (epoch ms): a process that
   * died holding it blocks the key no longer than that.
   */
  claim(id: IdempotencyId, now: number, leaseUntil: number): Promise<Claim>;
  /**
   * Turns the caller's claim into a completed record kept until `expiresAt` (epoch ms). False, and
   * nothing written, when the claim is no longer the caller's (its lease ran out and another request took it).
   */
  complete(id: IdempotencyId, token: string, record: CompletedRecord, expiresAt: number): Promise<boolean>;
  /** Gives the key up, when it is still the caller's pending claim: the next request with it runs afresh. */
  release(id: IdempotencyId, token: string): Promise<void>;
  /** Resolves when the backend answers (readiness); rejects otherwise. */
  ping(): Promise<void>;
  close(): Promise<void>;
}
