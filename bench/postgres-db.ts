import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { userInfo } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';

/**
 * The bench's PostgreSQL databases: `obs_bench_<pid>_<random>`, one per phase, created on the server
 * libpq's variables name (PGHOST, PGPORT, PGUSER, PGPASSWORD; by default the local cluster on its unix
 * socket as the OS user, as test/support/postgres.ts and .ci/run reach it) and dropped when the phase ends,
 * or when the bench exits for any reason. A run killed before that leaves its databases behind; the next
 * run drops those whose process is gone.
 */

const host = process.env.PGHOST ?? '/var/run/postgresql';
const user = process.env.PGUSER ?? userInfo().username;
const port = process.env.PGPORT ?? '5432';
const isLocal = host.startsWith('/');
const admin = { ...process.env, PGHOST: host, PGUSER: user, PGPORT: port, PGDATABASE: 'postgres' };

const psql = (sql: string): string =>
  execFileSync('psql', ['-X', '-A', '-t', '-v', 'ON_ERROR_STOP=1', '-c', sql], {
    env: admin,
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'pipe'],
  }).trim();

const stderrOf = (error: unknown): string => {
  const { stderr } = error as { stderr?: unknown };
  if (typeof stderr === 'string' && stderr.trim() !== '') return stderr.trim();
  return error instanceof Error ? error.message : String(error);
};

/** Starts the local cluster when its socket is missing (Debian's pg_ctlcluster, about 2 s). */
const startLocalCluster = (): void => {
  if (existsSync(join(host, `.s.PGSQL.${port}`))) return;
  const cluster = execFileSync('pg_lsclusters', ['--no-header'], { encoding: 'utf8' })
    .split('\n')
    .map((line) => line.trim().split(/\s+/))
    .find(([, , clusterPort]) => clusterPort === port);
  const [version, name] = cluster ?? [];
  if (!version || !name) throw new Error(`no local PostgreSQL cluster listens on port ${port}`);
  execFileSync('pg_ctlcluster', [version, name, 'start'], { stdio: 'ignore' });
};

const isRunning = (pid: number): boolean => {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
};

const quoted = (name: string): string => `"${name.replace(/"/g, '""')}"`;
const drop = (database: string): void => {
  psql(`DROP DATABASE IF EXISTS ${quoted(database)} WITH (FORCE)`);
};

const dropAbandoned = (): void => {
  const names = psql("SELECT datname FROM pg_database WHERE datname LIKE 'obs\\_bench\\_%'").split('\n');
  for (const name of names) {
    const pid = Number(/^obs_bench_(\d+)_/.exec(name)?.[1]);
    if (pid && !isRunning(pid)) drop(name);
  }
};

let ready: string | null | undefined;

/**
 * Null when a server answers (the local cluster started first if it was down), else why not. Asked once:
 * the answer decides the default of BENCH_BACKENDS.
 */
export const postgresUnavailable = (): string | null => {
  if (ready !== undefined) return ready;
  try {
    if (isLocal) startLocalCluster();
    psql('SELECT 1');
    dropAbandoned();
    ready = null;
  } catch (error) {
    ready = stderrOf(error) || 'no answer';
  }
  return ready;
};

const live = new Set<string>();
process.on('exit', () => {
  for (const database of live) {
    try {
      drop(database);
    } catch {
      // The server went away first; the next run drops it as abandoned.
    }
  }
});

export interface BenchDatabase {
  url: string;
  name: string;
  /** Drops the database (closing whatever is still connected to it). Idempotent. */
  drop: () => void;
}

/** A new empty database; `label` shows in its name (`obs_bench_<pid>_<label>_<random>`). */
export const createBenchDatabase = (label: string): BenchDatabase => {
  const reason = postgresUnavailable();
  if (reason) throw new Error(`PostgreSQL is not available to the bench: ${reason}`);
  const name = `obs_bench_${process.pid}_${label.replace(/[^a-z0-9]/g, '')}_${randomBytes(3).toString('hex')}`;
  psql(`CREATE DATABASE ${quoted(name)}`);
  live.add(name);
  return {
    name,
    url: `postgresql://${encodeURIComponent(user)}@${encodeURIComponent(host)}:${port}/${name}`,
    drop: () => {
      if (!live.delete(name)) return;
      drop(name);
    },
  };
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
