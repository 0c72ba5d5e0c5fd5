import Database from 'better-sqlite3';
import { ownerOnlyDatabase } from './private-files.js';
import { sqliteOpeningBusyTimeoutMs } from './sqlite-busy.js';

/**
 * Opens one of the service's SQLite files in DATA_DIR as its stores do: owner-only before SQLite creates it,
 * WAL so that readers never wait for the writer, `synchronous = NORMAL` (a power cut may lose the last
 * commits, never the file; each store says why that is enough for it), and the opening busy time-out while
 * the schema is made. The store lowers it to sqliteBusyTimeoutMs once made.
 */
export const openSqliteFile = (file: string): Database.Database => {
  ownerOnlyDatabase(file);
  const db = new Database(file);
  db.pragma('journal_mode = WAL');
  db.pragma('synchronous = NORMAL');
  db.pragma(`busy_timeout = ${sqliteOpeningBusyTimeoutMs}`);
  return db;
};
