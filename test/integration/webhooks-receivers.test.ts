import { expect } from 'chai';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { freePort } from '../support/process.js';
import { request, startTestServer, withTenant, type TestServer } from '../support/server.js';
import { eventually } from '../support/wait.js';

/**
 * The receivers docs/webhooks.md shows, cut from the page and run as they are against real deliveries: the
 * Node one with the `standardwebhooks` package, and the Python one with the standard library only. Each
 * gets the secret exactly as the API showed it, and is reached as a loopback receiver over http, which the
 * service allows outside production with no setting.
 */
const root = fileURLToPath(new URL('../..', import.meta.url));
const guide = readFileSync(join(root, 'docs', 'webhooks.md'), 'utf8');

/** The fenced code between `<!-- receiver-<name>:start -->` and `…:end -->`. */
const snippet = (name: string): string => {
  const section = new RegExp(`<!-- receiver-${name}:start -->([\\s\\S]*?)<!-- receiver-${name}:end -->`).exec(
    guide,
  );
  const code = section && /```\w+\n([\s\S]*?)```/.exec(section[1]!);
  if (!code) throw new Error(`docs/webhooks.md has no receiver-${name} snippet`);
  return code[1]!;
};

const python = spawnSync('python3', ['--version']).status === 0 ? 'python3' : null;

describe('the receivers in docs/webhooks.md, against real deliveries', function () {
  this.timeout(30_000);
  let server: TestServer;
  let tenantId: string;
  let key: string;
  let scratch: string;
  const children: ChildProcess[] = [];

  before(async () => {
    server = await startTestServer();
    const tenant = await withTenant(server);
    tenantId = tenant.tenantId;
    key = await tenant.key(['webhooks:manage', 'observations:read', 'observations:write']);
    // The Node receiver imports standardwebhooks as an installed package would be found.
    scratch = mkdtempSync(join(tmpdir(), 'receivers-'));
    symlinkSync(join(root, 'node_modules'), join(scratch, 'node_modules'));
  });
  afterEach(() => {
    for (const child of children.splice(0)) child.kill('SIGKILL');
  });
  after(async () => {
    await server.close();
    rmSync(scratch, { recursive: true, force: true });
  });

  const api = (path: string, init: Parameters<typeof request>[1] = {}) =>
    request(`${server.url}/v1/tenants/${tenantId}${path}`, {
      ...init,
      headers: { 'X-API-Key': key, ...init.headers },
    });

  /** Starts the receiver and resolves once it accepts connections. */
  const run = async (command: string, file: string, secret: string, port: number) => {
    const child = spawn(command, [file], {
      env: { ...process.env, WEBHOOK_SECRET: secret, PORT: String(port) },
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    children.push(child);
    let stderr = '';
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    await eventually(
      async () => {
        if (child.exitCode !== null) throw new Error(`the receiver exited: ${stderr}`);
        return fetch(`http://127.0.0.1:${port}/`, { method: 'POST', body: '{}' }).then(
          (response) => response.status,
          () => undefined,
        );
      },
      10_000,
      'the receiver to listen',
    );
  };

  const receivers = [
    { name: 'node', command: process.execPath, file: 'receiver.mjs', available: true },
    { name: 'python', command: python ?? 'python3', file: 'receiver.py', available: python !== null },
  ];

  it('shows examples/webhook-receiver.mjs, which the README runs, as it is', () => {
    expect(snippet('node')).to.equal(readFileSync(join(root, 'examples', 'webhook-receiver.mjs'), 'utf8'));
  });

  for (const { name, command, file, available } of receivers) {
    it(`the ${name} receiver verifies a test event and a real delivery, and refuses a forged one`, async function () {
      if (!available) {
        console.log(`      skipped: no ${command} on this machine`);
        this.skip();
      }
      const path = join(scratch, file);
      writeFileSync(path, snippet(name));
      const port = await freePort();
      const url = `http://127.0.0.1:${port}/hooks`;
      const created = await api('/webhooks', {
        method: 'POST',
        body: { url, events: ['observation.created'] },
      });
      expect(created.status, JSON.stringify(created.body)).to.equal(201);
      const { id, secret } = created.body as { id: string; secret: string };
      await run(command, path, secret, port);

      // Before it was started up, an unsigned request got 401 (the readiness probe above).
      const tested = await api(`/webhooks/${id}/test`, { method: 'POST' });
      expect(tested.body).to.include({ ok: true, statusCode: 204 });

      await api('/observations', { method: 'POST', body: { observedAt: '2026-05-01T07:30:00Z' } });
      const attempts = await eventually(async () => {
        const log = await api(`/webhooks/${id}/deliveries`);
        return log.body.data.length >= 2 ? log.body.data : undefined;
      });
      expect(attempts.map((attempt: { statusCode: number }) => attempt.statusCode)).to.deep.equal([204, 204]);

      const forged = await fetch(url, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          'webhook-id': 'evt_forged',
          'webhook-timestamp': String(Math.floor(Date.now() / 1000)),
          'webhook-signature': `v1,${Buffer.alloc(32).toString('base64')}`,
          'X-Service-Signature': '0'.repeat(64),
        },
        body: '{"id":"evt_forged"}',
      });
      expect(forged.status).to.equal(401);
    });
  }
});
