import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { userInfo } from 'node:os';
import { join } from 'node:path';

/**
 * A throw-away PostgreSQL database for this test run: `obs_test_<pid>_<random>`, created on first use and
 * dropped when the process exits. The server is the one libpq's variables name (PGHOST, PGPORT, PGUSER,
 * PGPASSWORD), by default the local cluster on its unix socket as the OS user.
 *
 * On the local cluster (a socket directory as host) it also gets the cluster going, as .ci/run does: it
 * starts it when it is down, and when the OS user has no role yet, creates it once as a superuser through
 * the `postgres` OS account (the test machine runs as root). Peer authentication then admits the OS user on
 * the socket, with pg_hba.conf as Debian ships it: no `trust` line, no password.
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

const stderrOf = (error: unknown): string => String((error as { stderr?: unknown }).stderr ?? error);

/** Starts the local cluster when its socket is missing (Debian's pg_ctlcluster, about 2 s). */
const startLocalCluster = (): void => {
  if (existsSync(join(host, `.s.PGSQL.${port}`))) return;
  const clusters = execFileSync('pg_lsclusters', ['--no-header'], { encoding: 'utf8' })
    .split('\n')
    .map((line) => line.trim().split(/\s+/))
    .filter(([, , clusterPort]) => clusterPort === port);
  const [version, name] = clusters[0] ?? [];
  if (!version || !name) throw new Error(`No local PostgreSQL cluster listens on port ${port}`);
  execFileSync('pg_ctlcluster', [version, name, 'start'], { stdio: 'ignore' });
};

/** The OS user's role, created once as a superuser by the `postgres` account, when it is missing. */
const ensureLocalRole = (): void => {
  try {
    psql('SELECT 1');
  } catch (error) {
    if (!/role ".*" does not exist/.test(stderrOf(error))) throw error;
    execFileSync('runuser', ['-u', 'postgres', '--', 'createuser', '--superuser', user], {
      env: { ...admin, PGUSER: 'postgres' },
    });
  }
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

/** Databases of earlier runs that were killed before their exit hook ran (their process is gone). */
const dropAbandoned = (): void => {
  const names = psql("SELECT datname FROM pg_database WHERE datname LIKE 'obs\\_test\\_%'").split('\n');
  for (const name of names) {
    const pid = Number(/^obs_test_(\d+)_/.exec(name)?.[1]);
    if (pid && !isRunning(pid)) drop(name);
  }
};

const urlOf = (database: string): string =>
  `postgresql://${encodeURIComponent(user)}@${encodeURIComponent(host)}:${port}/${database}`;

let created: { url: string } | { error: Error } | null = null;

/** Creates a database that is dropped when this process exits; returns its connection string. */
export const createTestDatabase = (): string => {
  if (isLocal) {
    startLocalCluster();
    ensureLocalRole();
    dropAbandoned();
  }
  const database = `obs_test_${process.pid}_${randomBytes(4).toString('hex')}`;
  psql(`CREATE DATABASE ${quoted(database)}`);
  process.once('exit', () => {
    try {
      drop(database);
    } catch {
      // The server went away first: nothing is left to drop, or the next run drops it as abandoned.
    }
  });
  return urlOf(database);
};

/** The run's database, created on first use and shared by every suite of this process. Throws when it cannot be had. */
export const postgresUrl = (): string => {
  if (!created) {
    try {
      created = { url: createTestDatabase() };
    } catch (error) {
      created = { error: new Error(`PostgreSQL is not available for the tests: ${stderrOf(error)}`) };
    }
  }
  if ('error' in created) throw created.error;
  return created.url;
};

/**
 * A suite on the run's PostgreSQL database. PostgreSQL is part of this machine's test setup (.ci/run
 * installs and starts it), so a server that cannot be had fails the suite: it never skips.
 */
export const describePostgres = (name: string, body: (url: string) => void): void => {
  describe(name, function () {
    let url: string;
    try {
      url = postgresUrl();
    } catch (error) {
      it('has a PostgreSQL server to run on', () => {
        throw error;
      });
      return;
    }
    body(url);
  });
};
