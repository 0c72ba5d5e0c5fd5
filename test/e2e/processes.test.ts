import Database from 'better-sqlite3';
import { expect } from 'chai';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { tempDir } from '../support/adapters.js';
import { startTs, stop } from '../support/process.js';
import { createTenant, platformKey, startServiceProcess } from '../support/service-process.js';
import { startReceiver } from '../support/receiver.js';
import { request } from '../support/server.js';
import { eventually } from '../support/wait.js';

const secret = 'whsec-test-0123456789abcdef';

/** The service as `npm start` runs it, on a DATA_DIR that other processes share. */
const startProcess = async (dataDir: string, env: Record<string, string> = {}) => {
  const started = await startServiceProcess(dataDir, {
    CURSOR_SECRET: 'processes-test-cursor-secret-0123456789',
    RATE_LIMIT: 'off',
    WEBHOOK_ALLOW_HTTP: 'true',
    WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true',
    WEBHOOK_RETRY_SCHEDULE: '100ms,100ms',
    WORKER_LEASE_TTL: '2s',
    // One address for the processes of one DATA_DIR, as behind a load balancer: on their own ports with
    // PUBLIC_URL unset, each would issue tokens the others refuse, and the second would not start.
    PUBLIC_URL: 'http://127.0.0.1:3000',
    ...env,
  });
  return { ...started, stop: () => stop(started.child, started.exited) };
};

const asPlatform = { 'X-API-Key': platformKey };

/** Subscribes a tenant to a receiver that always fails, records an observation: the webhook gets disabled. */
const disableAWebhook = async (url: string, receiverUrl: string, name: string) => {
  const { tenantId, headers } = await createTenant(url, name);
  const api = (path: string, init: Parameters<typeof request>[1] = {}) =>
    request(`${url}/v1/tenants/${tenantId}${path}`, { ...init, headers });
  const webhook = await api('/webhooks', {
    method: 'POST',
    body: { url: receiverUrl, events: ['observation.created'], secret },
  });
  expect(webhook.status, JSON.stringify(webhook.body)).to.equal(201);
  const observed = await api('/observations', {
    method: 'POST',
    body: { observedAt: '2026-05-01T09:30:00Z', notes: 'a fox' },
  });
  expect(observed.status).to.equal(201);
  return webhook.body.id as string;
};

/** The disable e-mails in the outbox that name the webhook. */
const mailsAbout = (dataDir: string, webhookId: string): number => {
  const outbox = join(dataDir, 'outbox');
  const files = (() => {
    try {
      return readdirSync(outbox);
    } catch {
      return [];
    }
  })();
  return files.filter((file) => readFileSync(join(outbox, file), 'utf8').includes(webhookId)).length;
};

describe('several processes on one DATA_DIR', () => {
  let dir: string;
  let remove: () => void;
  let cleanups: (() => Promise<unknown>)[] = [];
  beforeEach(() => ({ dir, remove } = tempDir()));
  afterEach(async () => {
    for (const cleanup of cleanups.reverse()) await cleanup();
    cleanups = [];
    remove();
  });
  const started = async (env: Record<string, string> = {}) => {
    const service = await startProcess(dir, env);
    cleanups.push(() => service.stop());
    return service;
  };

  it('lists every tenant the CLI creates beside a loaded service, within the polling bound', async function () {
    this.timeout(120_000);
    const service = await started();
    const { tenantId, headers } = await createTenant(service.url, 'busy');
    let loading = true;
    const load = async () => {
      while (loading) {
        await request(`${service.url}/v1/tenants/${tenantId}/observations`, {
          method: 'POST',
          body: { observedAt: '2026-05-01T09:30:00Z', notes: 'load' },
          headers,
        });
      }
    };
    const loaders = [load(), load(), load()];
    const created: string[] = [];
    try {
      for (let round = 0; round < 5; round += 1) {
        const runs = [0, 1].map((n) => {
          const run = startTs(
            'src/cli/main.ts',
            ['tenant', 'create', '--name', `cli${round}x${n}`, '--email', 'o@x.test', '--json'],
            {
              DATA_DIR: dir,
            },
          );
          return run.exited.then((code) => {
            expect(code, run.output.stderr).to.equal(0);
            created.push((JSON.parse(run.output.stdout) as { id: string }).id);
          });
        });
        await Promise.all(runs);
      }
    } finally {
      loading = false;
      await Promise.all(loaders);
    }
    expect(created).to.have.length(10);
    // A foreign append is projected within one polling interval (1 s), whatever inotify says.
    const listed = await eventually(
      async () => {
        const list = await request(`${service.url}/v1/tenants?limit=100`, { headers: asPlatform });
        const ids = new Set((list.body.data as { id: string }[]).map((tenant) => tenant.id));
        return created.every((id) => ids.has(id)) ? ids : undefined;
      },
      2000,
      'every tenant the CLI created in the list',
    );
    expect(listed.size).to.be.at.least(11);
  });

  it('runs the worker duties in one process, the other stands by, and each disable e-mail is sent once', async function () {
    this.timeout(120_000);
    const receiver = await startReceiver(secret, () => 500);
    cleanups.push(() => receiver.close());
    const first = await started();
    const second = await started();
    await eventually(
      () => Promise.resolve(second.output.stdout.includes('standing by') || undefined),
      5000,
      'the second process to say it stands by',
    );
    const ready = await request(`${second.url}/health/ready`, { headers: { 'X-API-Key': platformKey } });
    expect(JSON.stringify(ready.body)).to.include('standby');

    // Both processes serve the API; one worker sends the e-mail, once.
    const webhookId = await disableAWebhook(second.url, receiver.url, 'twice');
    await eventually(
      () => Promise.resolve(mailsAbout(dir, webhookId) > 0 || undefined),
      15_000,
      'the e-mail',
    );
    await new Promise((resolve) => setTimeout(resolve, 1500));
    expect(mailsAbout(dir, webhookId)).to.equal(1);

    // The owner is killed outright: the standby takes over within the lease (2 s) and does the work.
    first.child.kill('SIGKILL');
    await first.exited;
    await eventually(
      () => Promise.resolve(second.output.stdout.includes('running the worker duties') || undefined),
      8000,
      'the standby to take over',
    );
    const afterTakeOver = await disableAWebhook(second.url, receiver.url, 'takeover');
    await eventually(
      () => Promise.resolve(mailsAbout(dir, afterTakeOver) > 0 || undefined),
      15_000,
      'the e-mail after the take-over',
    );
    expect(mailsAbout(dir, afterTakeOver)).to.equal(1);
  });

  it('takes the duties over within the lease TTL of a kill -9, just after the lease runs out', async function () {
    this.timeout(60_000);
    const ttlMs = 3_000;
    const first = await started({ ROLE: 'worker', WORKER_LEASE_TTL: '3s', LOG_LEVEL: 'info' });
    const second = await started({ ROLE: 'worker', WORKER_LEASE_TTL: '3s', LOG_LEVEL: 'info' });
    await eventually(
      () => Promise.resolve(second.output.stdout.includes('standing by') || undefined),
      10_000,
      'the second process to stand by',
    );
    // Past a renewal or two, so that the standby's schedule is not the start's.
    await new Promise((resolve) => setTimeout(resolve, 2_300));
    const lease = () => {
      const db = new Database(join(dir, 'events.db'), { readonly: true });
      try {
        return db
          .prepare("SELECT owner, expires_at AS expiresAt FROM leases WHERE name = 'worker'")
          .get() as {
          owner: string;
          expiresAt: number;
        };
      } finally {
        db.close();
      }
    };
    const before = lease();
    const killedAt = Date.now();
    first.child.kill('SIGKILL');
    await first.exited;
    // The owner may have renewed between the read and the kill: the lease's end as it stood at the kill.
    const expiresAt = lease().expiresAt;
    expect(expiresAt - before.expiresAt).to.be.at.most(ttlMs);
    const tookOver = await eventually(
      () => {
        const line = second.output.stdout
          .split('\n')
          .find((text) => text.includes('"running the worker duties"'));
        return Promise.resolve(line ? (JSON.parse(line) as { time: number }).time : undefined);
      },
      15_000,
      'the standby to take over',
    );
    console.log(
      `      took over ${tookOver - killedAt} ms after the kill, ${tookOver - expiresAt} ms after the lease ran out (TTL ${ttlMs} ms)`,
    );
    // Within the TTL of the kill, with a second for a loaded machine; never before the lease ran out.
    expect(tookOver - killedAt).to.be.below(ttlMs + 1_000);
    expect(tookOver).to.be.at.least(expiresAt);
  });

  it('serves the API from ROLE=api processes while a ROLE=worker process projects what they write', async function () {
    this.timeout(120_000);
    const worker = await started({ ROLE: 'worker' });
    const api = await started({ ROLE: 'api' });
    const { tenantId, headers } = await createTenant(api.url, 'split');
    const created = await request(`${api.url}/v1/tenants/${tenantId}/observations`, {
      method: 'POST',
      body: { observedAt: '2026-05-01T09:30:00Z', notes: 'seen by the worker' },
      headers,
    });
    expect(created.status).to.equal(201);
    const position = created.headers.get('x-position');
    const list = await request(`${api.url}/v1/tenants/${tenantId}/observations?minPosition=${position}`, {
      headers,
    });
    expect(list.status, JSON.stringify(list.body)).to.equal(200);
    expect(list.body.data.map((o: { id: string }) => o.id)).to.deep.equal([created.body.id]);
    expect(worker.output.stdout).to.include('running the worker duties');
    expect(api.output.stdout).not.to.include('running the worker duties');
  });
});
