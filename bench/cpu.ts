import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import pg from 'pg';

/**
 * CPU per request (issue 28): a server process's CPU and that of the PostgreSQL backends serving its
 * database, read from /proc/<pid>/stat (utime + stime: every thread of the process, its children
 * excluded) before and after a measurement. Linux only; elsewhere the figures are NaN.
 */

const ticksPerSecond = (() => {
  try {
    return Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;
  } catch {
    return 100;
  }
})();

/** utime + stime in ms, or null when the process is gone (or /proc is not there). */
export const cpuMsOf = (pid: number): number | null => {
  let stat: string;
  try {
    stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  } catch {
    return null;
  }
  // The command name (field 2) may hold spaces; the fields after its closing parenthesis start at state (3).
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return ((Number(fields[11]) + Number(fields[12])) * 1000) / ticksPerSecond;
};

export interface CpuSample {
  serverMs: number;
  backendsMs: Map<number, number>;
}

export interface CpuPerRequest {
  /** The server process alone, ms of CPU per completed request. */
  nodeMs: number;
  /** The PostgreSQL backends of its database, ms per request. */
  postgresMs: number;
  /** Both. */
  totalMs: number;
  /** Backends that connected during the measurement (all their CPU counted) or left it (theirs lost). */
  backendsAppeared: number;
  backendsVanished: number;
}

/**
 * Samples one server and its database's backends. The watching connection is to that database too; its own
 * backend is left out. Background processes (WAL writer, checkpointer) serve every database and are not
 * counted; autovacuum workers are, when they work on this database during a measurement.
 */
export const cpuWatcher = async (pid: number, databaseUrl: string) => {
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  const sample = async (): Promise<CpuSample> => {
    const { rows } = await client.query<{ pid: number }>(
      'SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()',
    );
    const backendsMs = new Map<number, number>();
    for (const row of rows) {
      const ms = cpuMsOf(row.pid);
      if (ms !== null) backendsMs.set(row.pid, ms);
    }
    return { serverMs: cpuMsOf(pid) ?? NaN, backendsMs };
  };
  return { sample, close: () => client.end() };
};

export const cpuPerRequest = (before: CpuSample, after: CpuSample, requests: number): CpuPerRequest => {
  let postgres = 0;
  let appeared = 0;
  for (const [pid, ms] of after.backendsMs) {
    const earlier = before.backendsMs.get(pid);
    if (earlier === undefined) appeared += 1;
    postgres += ms - (earlier ?? 0);
  }
  const vanished = [...before.backendsMs.keys()].filter((pid) => !after.backendsMs.has(pid)).length;
  const node = after.serverMs - before.serverMs;
  return {
    nodeMs: node / requests,
    postgresMs: postgres / requests,
    totalMs: (node + postgres) / requests,
    backendsAppeared: appeared,
    backendsVanished: vanished,
  };
};
