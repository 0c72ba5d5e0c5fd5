import Database from 'better-sqlite3';

/**
 * A process that takes the write lock of each SQLite file named on its command line (BEGIN IMMEDIATE) and
 * keeps it until it is killed: what another process frozen in the middle of a write looks like to the
 * service. It says `locked` on stdout once it holds them all.
 */
const held = process.argv.slice(2).map((file) => {
  const db = new Database(file);
  db.pragma('busy_timeout = 10000');
  db.exec('BEGIN IMMEDIATE');
  return db;
});
process.stdout.write(`locked ${held.length}\n`);
setInterval(() => undefined, 60_000);
