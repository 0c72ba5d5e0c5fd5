import { expect } from 'chai';
import { spawn } from 'node:child_process';
import { tempDir } from '../support/adapters.js';
import { eventually } from '../support/events.js';
import { freePort } from '../support/process.js';
import { platformKey } from '../support/service-process.js';

/** `npm start` as an operator runs it; resolves once the service logs where it listens, with its pid. */
const npmStart = async (dataDir: string) => {
  const port = await freePort();
  const npm = spawn('npm', ['start'], {
    env: { ...process.env, DATA_DIR: dataDir, PORT: String(port), PLATFORM_ADMIN_KEY: platformKey },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  npm.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  npm.stderr.resume();
  const exited = new Promise<number | null>((resolve) => npm.once('exit', (code) => resolve(code)));
  let pid = 0;
  await eventually(() => {
    const line = stdout.split('\n').find((entry) => entry.includes('"msg":"listening on'));
    if (line) pid = (JSON.parse(line) as { pid: number }).pid;
    return pid > 0;
  }, 30_000);
  const url = `http://127.0.0.1:${port}`;
  expect((await fetch(`${url}/health/live`)).status).to.equal(200);
  return { npm, pid, url, exited };
};

const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

const refused = async (url: string) =>
  fetch(`${url}/health/live`).then(
    () => false,
    () => true,
  );

describe('npm start', function () {
  this.timeout(60_000);

  it('stops everything when the npm process gets SIGTERM', async () => {
    const { dir, remove } = tempDir();
    let pid = 0;
    try {
      const started = await npmStart(dir);
      pid = started.pid;
      expect(started.pid).to.not.equal(started.npm.pid);
      started.npm.kill('SIGTERM');
      await started.exited;
      await eventually(() => !alive(started.pid), 10_000);
      expect(await refused(started.url)).to.equal(true);
    } finally {
      // An orphan this test left behind would serve on: it is ended here, by its pid.
      if (pid && alive(pid)) process.kill(pid, 'SIGKILL');
      remove();
    }
  });

  it('stops everything when the pid the service logs gets SIGTERM, and npm exits 0 with it', async () => {
    const { dir, remove } = tempDir();
    try {
      const started = await npmStart(dir);
      process.kill(started.pid, 'SIGTERM');
      expect(await started.exited).to.equal(0);
      expect(alive(started.pid)).to.equal(false);
      expect(await refused(started.url)).to.equal(true);
    } finally {
      remove();
    }
  });
});
