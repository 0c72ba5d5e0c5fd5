import type Database from 'better-sqlite3';
import type { EventStore, Lease } from './port.js';
import { whenFree } from '../core/sqlite-busy.js';

/**
 * Leases for the duties the embedded store cannot share out between processes (its consumer groups and
 * the projections): one owner at a time, renewed while it works, taken over when it expires (a process
 * killed with -9 never releases it). They live in the event store's own file, so every process on one
 * DATA_DIR sees the same owner.
 */
const schema = `
  CREATE TABLE IF NOT EXISTS leases (
    name       TEXT    PRIMARY KEY,
    owner      TEXT    NOT NULL,
    expires_at INTEGER NOT NULL
  );
`;

/**
 * Thrown by a consumer group's commit in a process whose lease another process took meanwhile (it was
 * stalled longer than the lease): the commit is refused, and the consumer fails (a store failure: its
 * supervisor restarts it, and the renewal stops the duties).
 */
export class LeaseLostError extends Error {
  override readonly name = 'LeaseLostError';
  constructor(lease: string, holder: string | null) {
    super(`The ${lease} lease is held by ${holder ?? 'no one'} now; this process's commit is refused`);
  }
}

export interface SqliteLeases extends Pick<EventStore, 'acquireLease' | 'releaseLease'> {
  /**
   * The fence: throws LeaseLostError when this store last acquired a lease that another owner holds now.
   * Called inside a write transaction (BEGIN IMMEDIATE), so no other process can take the lease between
   * the check and the commit. A store that holds no lease is not fenced.
   */
  checkFence: () => void;
}

export const sqliteLeases = (db: Database.Database): SqliteLeases => {
  db.exec(schema);
  const take = db.prepare(
    `INSERT INTO leases (name, owner, expires_at) VALUES (@name, @owner, @expiresAt)
     ON CONFLICT (name) DO UPDATE SET owner = excluded.owner, expires_at = excluded.expires_at
     WHERE leases.owner = excluded.owner OR leases.expires_at <= @now`,
  );
  const holder = db.prepare('SELECT owner, expires_at AS expiresAt FROM leases WHERE name = ?');
  const release = db.prepare('DELETE FROM leases WHERE name = ? AND owner = ?');
  const acquire = db.transaction((name: string, owner: string, ttlMs: number): Lease => {
    const now = Date.now();
    take.run({ name, owner, now, expiresAt: now + ttlMs });
    const row = holder.get(name) as { owner: string; expiresAt: number };
    return { acquired: row.owner === owner, holder: row.owner, expiresAt: new Date(row.expiresAt) };
  });
  /** The lease this store last acquired and still means to hold: what its consumer groups' commits need. */
  let held: { name: string; owner: string } | null = null;
  return {
    acquireLease: async (name, owner, ttlMs) => {
      const lease = await whenFree(() => acquire.immediate(name, owner, ttlMs));
      if (lease.acquired) held = { name, owner };
      return lease;
    },
    releaseLease: async (name, owner) => {
      if (held?.name === name && held.owner === owner) held = null;
      await whenFree(() => release.run(name, owner));
    },
    checkFence: () => {
      if (!held) return;
      const row = holder.get(held.name) as { owner: string } | undefined;
      if (row?.owner !== held.owner) throw new LeaseLostError(held.name, row?.owner ?? null);
    },
  };
};
