import type pg from 'pg';
import { inTransaction, orUnavailable } from '../postgres/client.js';
import type { CollectionSpec } from './port.js';
import { createTableSql, generatedColumns, indexDefinitions, table, tableName } from './postgres-sql.js';

/**
 * The tables of the PostgreSQL read models: made, grown and dropped by whichever process needs them
 * first, serialized per table by an advisory lock (two processes ensuring one collection at once would
 * otherwise collide in the catalog).
 *
 * A new table is empty, so its indexes are made with it in one short transaction. Indexes added to a table
 * that has rows (those a bulk catch-up or a rebuild left out until the end, or a new list index) are built
 * CONCURRENTLY, outside any transaction: a transaction that builds an index over a large table would hold
 * back every reader of the events for as long as it runs (docs/architecture.md, the horizon), and would
 * stop the projection's writes. An index a build left invalid (interrupted) is dropped and built again.
 */

export interface TableState {
  exists: boolean;
  columns: Set<string>;
  /** Every index by name, valid or not. */
  indexes: Set<string>;
  /** The indexes that are built and usable. */
  valid: Set<string>;
}

/** What the catalog holds of a table: its columns and indexes (none when it does not exist). */
export const describeTable = async (db: pg.Pool | pg.PoolClient, name: string): Promise<TableState> => {
  const { rows } = await db.query<{ kind: string; name: string }>(
    `SELECT 'table' AS kind, c.relname AS name FROM pg_class c
       WHERE c.oid = to_regclass(quote_ident($1))
     UNION ALL
     SELECT 'column', a.attname FROM pg_attribute a
       WHERE a.attrelid = to_regclass(quote_ident($1)) AND a.attnum > 0 AND NOT a.attisdropped
     UNION ALL
     SELECT CASE WHEN x.indisvalid THEN 'valid index' ELSE 'index' END, i.relname
       FROM pg_index x JOIN pg_class i ON i.oid = x.indexrelid
       WHERE x.indrelid = to_regclass(quote_ident($1))`,
    [name],
  );
  const of = (...kinds: string[]) =>
    new Set(rows.filter((row) => kinds.includes(row.kind)).map((row) => row.name));
  return {
    exists: of('table').size > 0,
    columns: of('column'),
    indexes: of('index', 'valid index'),
    valid: of('valid index'),
  };
};

/** The per-table lock, in the two-key space so that it meets no other advisory lock of the service. */
const lockSql = (fn: string) => `SELECT ${fn}(hashtext('readmodels ddl'), hashtext($1))`;

/** Columns of fields declared after the table was made (a table rewrite: a large one is better rebuilt). */
const addColumnsSql = (spec: CollectionSpec, physical: string, found: TableState): string[] =>
  [...baseColumns, ...generatedColumns(spec)]
    .filter(([columnName]) => !found.columns.has(columnName))
    .map(([, definition]) => `ALTER TABLE ${table(physical)} ADD COLUMN IF NOT EXISTS ${definition}`);

/** Columns every table has that tables made by earlier versions may lack (added without a rewrite). */
const baseColumns: [string, string][] = [['escaped', 'escaped boolean NOT NULL DEFAULT false']];

/**
 * The columns ANALYZE reads: every one but the document. The lists filter and sort on the others, and the
 * document's statistics took half of ANALYZE's time after a rebuild (docs/benchmarks.md).
 */
const statisticsColumns = (found: TableState): string =>
  [...found.columns]
    .filter((columnName) => columnName !== 'doc')
    .map((columnName) => `"${columnName}"`)
    .join(', ');

const buildConcurrently = async (
  pool: pg.Pool,
  name: string,
  wanted: ReturnType<typeof indexDefinitions>,
): Promise<void> => {
  const client = await orUnavailable(pool.connect());
  let broken = false;
  try {
    await client.query(lockSql('pg_advisory_lock'), [name]);
    // An index build on a full table takes as long as it takes; the session goes back to the pool after
    // (RESET below), or is dropped on a failure, so no other statement runs without the time-out.
    await client.query('SET statement_timeout = 0');
    try {
      const found = await describeTable(client, name);
      for (const index of wanted.filter(({ name: indexName }) => !found.valid.has(indexName))) {
        if (found.indexes.has(index.name))
          await client.query(`DROP INDEX CONCURRENTLY IF EXISTS "${index.name}"`);
        await client.query(`CREATE INDEX CONCURRENTLY IF NOT EXISTS "${index.name}" ${index.on}`);
      }
      // A table filled in bulk (a catch-up, a rebuild) has no statistics until autovacuum passes, and
      // until then the planner walks and sorts a tenant's rows instead of the list's index: ten times
      // slower at 5,000 rows (bench/postgres.ts). The statistics move with the table when a build is swapped in.
      await client.query(`ANALYZE "${name}" (${statisticsColumns(found)})`);
    } finally {
      await client.query(lockSql('pg_advisory_unlock'), [name]);
      await client.query('RESET statement_timeout');
    }
  } catch (error) {
    broken = true;
    throw error;
  } finally {
    client.release(broken);
  }
};

/** Makes the collection's table, its missing columns and (unless `withIndexes` is false) its missing indexes. */
export const ensureTable = async (
  pool: pg.Pool,
  spec: CollectionSpec,
  physical: string,
  withIndexes: boolean,
): Promise<void> => {
  const name = tableName(physical);
  const wanted = withIndexes ? indexDefinitions(spec, physical) : [];
  let found = await orUnavailable(describeTable(pool, name));
  if (!found.exists || addColumnsSql(spec, physical, found).length > 0) {
    await inTransaction(
      pool,
      async (client) => {
        await client.query(lockSql('pg_advisory_xact_lock'), [name]);
        const now = await describeTable(client, name);
        if (now.exists) {
          for (const statement of addColumnsSql(spec, physical, now)) await client.query(statement);
          return;
        }
        await client.query(createTableSql(spec, physical));
        for (const index of wanted)
          await client.query(`CREATE INDEX IF NOT EXISTS "${index.name}" ${index.on}`);
        // A generated column added to a full table rewrites it: no statement time-out for that.
      },
      { unbounded: true },
    );
    found = await orUnavailable(describeTable(pool, name));
  }
  if (wanted.some((index) => !found.valid.has(index.name))) {
    await orUnavailable(buildConcurrently(pool, name, wanted));
  }
};

export const dropTable = (pool: pg.Pool, physical: string): Promise<void> =>
  inTransaction(pool, async (client) => {
    await client.query(lockSql('pg_advisory_xact_lock'), [tableName(physical)]);
    await client.query(`DROP TABLE IF EXISTS ${table(physical)}`);
  });
