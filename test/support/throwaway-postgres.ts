import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { userInfo } from 'node:os';
import { join } from 'node:path';

/**
 * Throw-away PostgreSQL databases for the tests (`obs_test_…`) and the bench (`obs_bench_…`), named
 * `<prefix>_<pid>_…` and dropped when this process exits, or by the next run of the same prefix when a
 * killed process left them behind. The server is the one libpq's variables name (PGHOST, PGPORT, PGUSER,
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

/** What psql said on stderr, or the error's own message when it said nothing. */
export const stderrOf = (error: unknown): string => {
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

/** The OS user's role, created once as a superuser by the `postgres` account, when it is missing. */
const ensureLocalRole = (): void => {
  try {
    psql('SELECT 1');
  } catch (error) {
    if (!/role ".*" does not exist/.test(stderrOf(error))) throw error;
    // As the postgres OS user, as the postgres role: peer authentication admits no other.
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

const live = new Set<string>();
process.on('exit', () => {
  for (const database of live) {
    try {
      drop(database);
    } catch {
      // The server went away first: nothing is left to drop, or the next run drops it as abandoned.
    }
  }
});

export interface ThrowawayDatabase {
  name: string;
  url: string;
  /** Drops the database now (closing whatever is still connected to it). Idempotent. */
  drop: () => void;
}

export interface ThrowawayDatabases {
  /** Throws, with psql's words, when no server can be had. */
  prepare: () => void;
  /** A new empty database; `label` shows in its name (`<prefix>_<pid>_<label>_<random>`). */
  create: (label?: string) => ThrowawayDatabase;
}

/** Databases named `<prefix>_<pid>_…`: `prefix` of lower-case letters and underscores. */
export const throwawayDatabases = (prefix: string): ThrowawayDatabases => {
  let prepared = false;
  /** The server answers (the local cluster started, the role made); a killed run's databases dropped. */
  const prepare = (): void => {
    if (prepared) return;
    if (isLocal) {
      startLocalCluster();
      ensureLocalRole();
    }
    const pattern = new RegExp(`^${prefix}_(\\d+)_`);
    const like = `${prefix.replace(/_/g, '\\_')}\\_%`;
    for (const name of psql(`SELECT datname FROM pg_database WHERE datname LIKE '${like}'`).split('\n')) {
      const pid = Number(pattern.exec(name)?.[1]);
      if (pid && !isRunning(pid)) drop(name);
    }
    prepared = true;
  };
  const create = (label = ''): ThrowawayDatabase => {
    prepare();
    const name = [prefix, process.pid, label.replace(/[^a-z0-9]/g, ''), randomBytes(4).toString('hex')]
      .filter((part) => part !== '')
      .join('_');
    psql(`CREATE DATABASE ${quoted(name)}`);
    live.add(name);
    return {
      name,
      url: `postgresql://${encodeURIComponent(user)}@${encodeURIComponent(host)}:${port}/${name}`,
      drop: () => {
        if (live.delete(name)) drop(name);
      },
    };
  };
  return { prepare, create };
};
