import { expect } from 'chai';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { freePort } from '../support/process.js';
import { eventually } from '../support/wait.js';

/**
 * The README's Quickstart, run as a newcomer runs it: `npm start` in a checkout with no data, then the
 * shell blocks as they are written (only the ports are moved off 3000 and 4000, which may be taken), up to
 * a verified webhook on a local receiver. The README cannot drift from what works.
 */
const root = fileURLToPath(new URL('../..', import.meta.url));
const readme = readFileSync(join(root, 'README.md'), 'utf8');
const quickstart = readme.slice(
  readme.indexOf('## Quickstart'),
  readme.indexOf('\n## ', readme.indexOf('## Quickstart') + 5),
);
const shellBlocks = [...quickstart.matchAll(/```sh\n([\s\S]*?)```/g)].map((match) => match[1]!);

/** The commands of a block between its `# N.` comments, keyed by N. */
const steps = (block: string): Map<number, string> =>
  new Map(
    block
      .split(/^(?=# \d+\.)/m)
      .filter((part) => /^# \d+\./.test(part))
      .map((part) => [Number(/^# (\d+)\./.exec(part)![1]), part]),
  );

describe('the README Quickstart, followed as written', function () {
  this.timeout(90_000);
  let checkout: string;
  const started: ChildProcess[] = [];
  let port: number;
  let receiverPort: number;

  /** A shell in the checkout, as the reader's terminal. */
  const sh = (script: string, env: Record<string, string> = {}) => {
    const result = spawnSync('bash', ['-euo', 'pipefail', '-c', script], {
      cwd: checkout,
      env: { ...process.env, ...env },
      encoding: 'utf8',
    });
    expect(result.status, `${script}\n${result.stderr}`).to.equal(0);
    return result.stdout;
  };
  const localized = (text: string) =>
    text
      .replaceAll('127.0.0.1:3000', `127.0.0.1:${port}`)
      .replaceAll('127.0.0.1:4000', `127.0.0.1:${receiverPort}`);
  const background = (command: string, env: Record<string, string>) => {
    const child = spawn('bash', ['-c', command], {
      cwd: checkout,
      env: { ...process.env, ...env },
      detached: true,
    });
    started.push(child);
    const output = { stdout: '' };
    child.stdout.on('data', (chunk: Buffer) => (output.stdout += chunk.toString()));
    child.stderr.resume();
    return output;
  };

  before(async () => {
    // A checkout without data: everything of the repository but its data and the Quickstart's files.
    checkout = mkdtempSync(join(tmpdir(), 'quickstart-'));
    for (const entry of readdirSync(root))
      if (!['.git', 'data', 'tenant.json', 'webhook.json', 'job.json'].includes(entry))
        symlinkSync(join(root, entry), join(checkout, entry));
    port = await freePort();
    receiverPort = await freePort();
  });
  after(async () => {
    // Each was started in its own process group (npm and the service under it; the receiver): all stop.
    await Promise.all(
      started.map(async (child) => {
        if (child.pid === undefined || child.exitCode !== null) return;
        const exited = new Promise((resolve) => child.once('exit', resolve));
        process.kill(-child.pid, 'SIGTERM');
        await exited;
      }),
    );
    rmSync(checkout, { recursive: true, force: true });
  });

  it('has the blocks it is followed by', () => {
    expect(shellBlocks).to.have.length(4);
    expect([...steps(shellBlocks[1]!).keys()]).to.deep.equal([1, 2, 3]);
    expect([...steps(shellBlocks[2]!).keys()]).to.deep.equal([4, 5, 6]);
    expect([...steps(shellBlocks[3]!).keys()]).to.deep.equal([7, 8]);
  });

  it('starts with npm start, records and lists an observation, verifies a webhook on a local receiver, and learns what is in a photograph', async () => {
    const service = background('exec npm start', { PORT: String(port) });
    await eventually(
      () =>
        fetch(`http://127.0.0.1:${port}/health/live`).then(
          (r) => (r.ok ? true : undefined),
          () => undefined,
        ),
      60_000,
      'npm start to serve',
    );
    expect(service.stdout).to.include('generated a development platform admin key');

    const first = steps(shellBlocks[1]!);
    sh(localized(first.get(1)!));
    expect(sh(localized(first.get(2)!))).to.match(/^HTTP\/1\.1 201 Created/);
    const listed = JSON.parse(sh(localized(first.get(3)!)));
    expect(listed.data.map((o: { attributes: { species: string } }) => o.attributes.species)).to.deep.equal([
      'fox',
    ]);

    const second = steps(shellBlocks[2]!);
    sh(localized(second.get(4)!));
    const receiver = background(localized(second.get(5)!), { PORT: String(receiverPort) });
    await eventually(
      () =>
        fetch(`http://127.0.0.1:${receiverPort}/`, { method: 'POST' }).then(
          (r) => r.status,
          () => undefined,
        ),
      10_000,
      'the receiver to listen',
    );
    const outcome = JSON.parse(sh(localized(second.get(6)!)));
    expect(outcome).to.include({ ok: true, statusCode: 204, eventType: 'observation.created' });
    await eventually(() =>
      Promise.resolve(
        receiver.stdout.includes(`verified observation.created ${outcome.eventId}`) || undefined,
      ),
    );

    // "Step 2 again sends a real one."
    sh(localized(first.get(2)!));
    await eventually(() =>
      Promise.resolve(/verified observation\.created evt_(?!test_)/.test(receiver.stdout) || undefined),
    );

    const third = steps(shellBlocks[3]!);
    sh(localized(third.get(7)!));
    const job = await eventually(
      () => {
        const read = JSON.parse(sh(localized(third.get(8)!)));
        return Promise.resolve(read.status === 'completed' ? read : undefined);
      },
      30_000,
      'the detector job to complete',
    );
    expect(job.model).to.equal('objects-coco');
    expect(job.result.summary.counts).to.deep.equal({ cat: 1 });
  });
});
