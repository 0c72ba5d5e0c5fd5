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

export const sqliteLeases = (db: Database.Database): Pick<EventStore, 'acquireLease' | 'releaseLease'> => {
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
  return {
    acquireLease: (name, owner, ttlMs) => whenFree(() => acquire.immediate(name, owner, ttlMs)),
    releaseLease: async (name, owner) => {
      await whenFree(() => release.run(name, owner));
    },
  };
};
