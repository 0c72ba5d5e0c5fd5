import type Database from 'better-sqlite3';
import type { EventFilter } from './port.js';
import { toRecordedEvent, type EventRow } from './event-rows.js';
import { eventHash, genesisHash } from './hash-chain.js';

/** The embedded event store's table (sqlite.ts), and its indexes. */
export const schema = `
  CREATE TABLE IF NOT EXISTS events (
    position       INTEGER PRIMARY KEY AUTOINCREMENT,
    event_id       TEXT    NOT NULL UNIQUE,
    stream_name    TEXT    NOT NULL,
    stream_version INTEGER NOT NULL,
    event_type     TEXT    NOT NULL,
    tenant_id      TEXT    NOT NULL,
    data           TEXT    NOT NULL,
    metadata       TEXT    NOT NULL,
    hash           TEXT,
    UNIQUE (stream_name, stream_version)
  );
  CREATE INDEX IF NOT EXISTS events_by_type ON events (event_type, position);
  CREATE INDEX IF NOT EXISTS events_by_tenant ON events (tenant_id, position);
`;

/** SQL for an event filter, with its parameters; the text is stable per filter shape, so statements cache. */
export const filterClause = (filter: EventFilter = {}): { sql: string; params: unknown[] } => {
  const parts: string[] = [];
  const params: unknown[] = [];
  if (filter.eventTypes) {
    // Several types: the unary plus keeps SQLite off events_by_type, which cannot give them in position
    // order (it sorted every matching event after the checkpoint for each page); the rowid range scan
    // reads a page in order. One type reads that index in order, which is best for a rare type.
    const typeColumn = filter.eventTypes.length > 1 ? '+event_type' : 'event_type';
    parts.push(`${typeColumn} IN (${filter.eventTypes.map(() => '?').join(', ') || 'NULL'})`);
    params.push(...filter.eventTypes);
  }
  if (filter.streamPrefixes) {
    parts.push(`(${filter.streamPrefixes.map(() => 'substr(stream_name, 1, ?) = ?').join(' OR ') || '0'})`);
    for (const prefix of filter.streamPrefixes) params.push(prefix.length, prefix);
  }
  if (filter.tenantId !== undefined) {
    parts.push('tenant_id = ?');
    params.push(filter.tenantId);
  }
  return { sql: parts.map((part) => ` AND ${part}`).join(''), params };
};

/**
 * Stores written before events were chained get their hashes once, in commit order, on open: from then on
 * every event is covered. Adds the column first when the file predates it.
 */
export const chainUnhashedEvents = (db: Database.Database): void => {
  const columns = db.prepare('PRAGMA table_info(events)').all() as { name: string }[];
  if (!columns.some((column) => column.name === 'hash')) db.exec('ALTER TABLE events ADD COLUMN hash TEXT');
  // Without it, finding that no event lacks a hash read the whole table at every open (1.6 s at a million).
  db.exec('CREATE INDEX IF NOT EXISTS events_unhashed ON events (position) WHERE hash IS NULL');
  const unhashed = db
    .prepare('SELECT * FROM events WHERE hash IS NULL ORDER BY position')
    .all() as EventRow[];
  if (unhashed.length === 0) return;
  const previous = db.prepare('SELECT hash FROM events WHERE stream_name = ? AND stream_version = ?');
  const update = db.prepare('UPDATE events SET hash = ? WHERE position = ?');
  db.transaction(() => {
    for (const row of unhashed) {
      const before =
        row.stream_version === 0
          ? undefined
          : (previous.get(row.stream_name, row.stream_version - 1) as { hash: string | null } | undefined);
      const event = toRecordedEvent(row);
      update.run(eventHash(before?.hash ?? genesisHash, event), row.position);
    }
  })();
};
