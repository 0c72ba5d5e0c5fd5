import type pg from 'pg';
import { acquirePostgres, inTransaction, type PoolOptions, type PostgresHandle } from './client.js';

/**
 * The schema of each component (the event store, the read models, …) is a list of steps, applied in order
 * on start. `schema_migrations` records, per component, every version applied: version n means steps[0..n)
 * ran. A release only ever appends steps, never edits one that shipped.
 *
 * Each step runs in its own transaction under a transaction-scoped advisory lock on the component, so that
 * instances starting at once serialize: the second one waits, then finds the step recorded and skips it.
 * A step that fails rolls back whole, with its record, and start-up fails with it. A step may rewrite a
 * table, so it runs without the sessions' statement time-out (client.ts).
 */

export class MigrationError extends Error {}

/** The advisory lock key space of migrations (the first of the two keys); the second is the component's. */
const lockSpace = 0x6f627300; // 'obs\0'

const ensureTable = (pool: pg.Pool): Promise<void> =>
  inTransaction(pool, async (client) => {
    // Under the lock too: two concurrent CREATE TABLE IF NOT EXISTS can still collide in the catalog.
    await client.query('SELECT pg_advisory_xact_lock($1, 0)', [lockSpace]);
    await client.query(
      `CREATE TABLE IF NOT EXISTS schema_migrations (
         component  text        NOT NULL,
         version    integer     NOT NULL,
         applied_at timestamptz NOT NULL DEFAULT now(),
         PRIMARY KEY (component, version)
       )`,
    );
  });

/** The version the database holds of the component: how many of its steps ran. */
export const schemaVersion = async (pool: pg.Pool | pg.PoolClient, component: string): Promise<number> => {
  const { rows } = await pool.query<{ version: number | null }>(
    'SELECT max(version) AS version FROM schema_migrations WHERE component = $1',
    [component],
  );
  return rows[0]?.version ?? 0;
};

/**
 * Brings the component's schema to `steps.length`, applying the missing steps one transaction each.
 * Returns the versions it applied (none when the schema was current). Refuses a database that a newer
 * release migrated further than this one knows: its code may not read what those steps made.
 */
export const migrate = async (
  pool: pg.Pool,
  component: string,
  steps: readonly string[],
): Promise<number[]> => {
  await ensureTable(pool);
  const applied: number[] = [];
  for (;;) {
    const step = await inTransaction(
      pool,
      async (client) => {
        await client.query('SELECT pg_advisory_xact_lock($1, hashtext($2))', [lockSpace, component]);
        const version = await schemaVersion(client, component);
        if (version > steps.length) {
          throw new MigrationError(
            `The database holds version ${version} of the "${component}" schema; this release knows ${steps.length}`,
          );
        }
        if (version === steps.length) return null;
        await client.query(steps[version]!);
        await client.query('INSERT INTO schema_migrations (component, version) VALUES ($1, $2)', [
          component,
          version + 1,
        ]);
        return version + 1;
      },
      { unbounded: true },
    );
    if (step === null) return applied;
    applied.push(step);
  }
};

/**
 * An adapter's share of the process's pool (client.ts), its component's schema brought to `steps`; a
 * migration that fails releases the share before it throws, so a failed start leaves no pool open.
 */
export const acquireMigrated = async (
  url: string,
  options: PoolOptions,
  component: string,
  steps: readonly string[],
): Promise<PostgresHandle> => {
  const handle = acquirePostgres(url, options);
  try {
    await migrate(handle.pool, component, steps);
  } catch (error) {
    await handle.release();
    throw error;
  }
  return handle;
};
