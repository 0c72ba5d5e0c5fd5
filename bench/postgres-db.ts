import pg from 'pg';
import { stderrOf, throwawayDatabases, type ThrowawayDatabase } from '../test/support/throwaway-postgres.js';

/**
 * The bench's PostgreSQL databases: `obs_bench_<pid>_<label>_<random>`, one per phase, created on the server
 * libpq's variables name (PGHOST, PGPORT, PGUSER, PGPASSWORD; by default the local cluster on its unix
 * socket as the OS user, started when it is down, as the tests and .ci/run reach it) and dropped when the
 * phase ends, or when the bench exits for any reason. A run killed before that leaves its databases behind;
 * the next run drops those whose process is gone (test/support/throwaway-postgres.ts).
 */
const databases = throwawayDatabases('obs_bench');

let ready: string | null | undefined;

/**
 * Null when a server answers (the local cluster started first if it was down), else why not. Asked once:
 * the answer decides the default of BENCH_BACKENDS.
 */
export const postgresUnavailable = (): string | null => {
  if (ready !== undefined) return ready;
  try {
    databases.prepare();
    ready = null;
  } catch (error) {
    ready = stderrOf(error) || 'no answer';
  }
  return ready;
};

export type BenchDatabase = ThrowawayDatabase;

/** A new empty database; `label` shows in its name (`obs_bench_<pid>_<label>_<random>`). */
export const createBenchDatabase = (label: string): BenchDatabase => {
  const reason = postgresUnavailable();
  if (reason) throw new Error(`PostgreSQL is not available to the bench: ${reason}`);
  return databases.create(label);
};

export type Backend = 'sqlite' | 'postgres';

/**
 * BENCH_BACKENDS=sqlite,postgres (either or both): the backends of the phases that run on both (http,
 * scaleout, append, catchup, webhooks, rebuild). By default both when a PostgreSQL server answers, else
 * SQLite alone, with a note saying why; naming postgres when none answers is an error.
 */
export const benchBackends = (log: (message: string) => void): Backend[] => {
  const raw = process.env.BENCH_BACKENDS?.trim();
  if (raw) {
    const names = raw.split(',').map((name) => name.trim());
    for (const name of names)
      if (name !== 'sqlite' && name !== 'postgres')
        throw new Error(`BENCH_BACKENDS: ${name} is not a backend (sqlite, postgres)`);
    if (names.includes('postgres')) {
      const reason = postgresUnavailable();
      if (reason)
        throw new Error(`BENCH_BACKENDS names postgres, but PostgreSQL is not available: ${reason}`);
    }
    return (['sqlite', 'postgres'] as const).filter((name) => names.includes(name));
  }
  const reason = postgresUnavailable();
  if (reason === null) return ['sqlite', 'postgres'];
  log(`PostgreSQL is not available (${reason}): SQLite only; BENCH_BACKENDS=postgres makes this an error`);
  return ['sqlite'];
};

/**
 * ANALYZE of the whole database, before a phase measures lists on tables it has just filled. Autovacuum
 * does the same within its naptime (a minute by default) once a table has grown, but until then the
 * planner has no column statistics: it guesses that a tenant holds about 1 % of the rows (60 of 5,000),
 * and reads and sorts all of that tenant's rows instead of walking the list's index, about 10 times slower
 * at 5,000 observations. The figure is the service's, not how soon autovacuum happened to pass.
 */
export const analyzeDatabase = async (databaseUrl: string): Promise<void> => {
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  try {
    await client.query('ANALYZE');
  } finally {
    await client.end();
  }
};
