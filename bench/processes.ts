import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * Child processes and temp dirs of one benchmark run. Everything started here is registered, so that an
 * exit for any reason (failure, Ctrl-C) kills the children and removes the directories.
 */

export const projectRoot = join(dirname(fileURLToPath(import.meta.url)), '..');

const children = new Set<ChildProcess>();
const dirs = new Set<string>();

export const tempDir = (prefix: string): string => {
  const dir = mkdtempSync(join(tmpdir(), `bench-${prefix}-`));
  dirs.add(dir);
  return dir;
};

export const removeTempDir = (dir: string): void => {
  rmSync(dir, { recursive: true, force: true });
  dirs.delete(dir);
};

const running = (child: ChildProcess) => child.exitCode === null && child.signalCode === null;

/** Synchronous, so that it also works from an 'exit' handler. */
export const cleanupSync = (): void => {
  for (const child of children) if (running(child)) child.kill('SIGKILL');
  children.clear();
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
  dirs.clear();
};

process.on('exit', cleanupSync);

/** An ephemeral port on loopback that was free a moment ago. */
export const freePort = (): Promise<number> =>
  new Promise((resolve, reject) => {
    const server = createServer();
    server.on('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as AddressInfo;
      server.close(() => resolve(port));
    });
  });

export interface Child {
  process: ChildProcess;
  /** Everything the child wrote to stdout and stderr, trimmed to the last 64 KiB. */
  output: () => string;
  exited: Promise<number | null>;
}

/** `node --import tsx <file>` from the project root; extra node flags (e.g. --cpu-prof) go before the file. */
export const startChild = (
  file: string,
  {
    env = {},
    args = [],
    nodeArgs = [],
  }: { env?: Record<string, string>; args?: string[]; nodeArgs?: string[] } = {},
): Child => {
  const child = spawn(process.execPath, [...nodeArgs, '--import', 'tsx', join(projectRoot, file), ...args], {
    cwd: projectRoot,
    env: { ...process.env, ...env },
    // stdin stays open while this process lives: a child can watch it to exit when the bench dies.
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  children.add(child);
  let output = '';
  const collect = (chunk: Buffer) => {
    output = (output + chunk.toString('utf8')).slice(-65536);
  };
  child.stdout?.on('data', collect);
  child.stderr?.on('data', collect);
  const exited = new Promise<number | null>((resolve) => {
    child.once('exit', (code) => {
      children.delete(child);
      resolve(code);
    });
  });
  return { process: child, output: () => output, exited };
};

/**
 * `node --cpu-prof` flags when BENCH_CPU_PROF names a directory: profiles land in <dir>/<name>/, one per
 * thread (tsx's loader runs in a thread of its own; the main thread's profile is the larger file).
 */
export const cpuProfileArgs = (name: string): string[] => {
  const dir = process.env.BENCH_CPU_PROF;
  return dir ? ['--cpu-prof', `--cpu-prof-dir=${join(dir, name)}`] : [];
};

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Resolves once GET <url> answers 200; rejects when the child exits first or after `timeoutMs`. */
export const waitHealthy = async (url: string, child: Child, timeoutMs = 30_000): Promise<void> => {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (!running(child.process))
      throw new Error(`server exited with ${child.process.exitCode}:\n${child.output()}`);
    const ok = await fetch(url, { signal: AbortSignal.timeout(1000) }).then(
      (response) => response.ok,
      () => false,
    );
    if (ok) return;
    await sleep(100);
  }
  throw new Error(`${url} did not answer within ${timeoutMs} ms:\n${child.output()}`);
};

/** SIGTERM, then SIGKILL if the child has not exited within `graceMs`. */
export const stopChild = async (child: Child, graceMs = 10_000): Promise<void> => {
  if (!running(child.process)) return;
  child.process.kill('SIGTERM');
  const timer = setTimeout(() => child.process.kill('SIGKILL'), graceMs);
  await child.exited;
  clearTimeout(timer);
};

/** Waits for the child to exit by itself; kills it after `timeoutMs`. */
export const waitExit = async (child: Child, timeoutMs: number): Promise<number | null> => {
  const timer = setTimeout(() => child.process.kill('SIGKILL'), timeoutMs);
  const code = await child.exited;
  clearTimeout(timer);
  return code;
};
