import { expect } from 'chai';
import { tempDir } from '../support/adapters.js';
import { eventually } from '../support/events.js';
import { freePort, startTs, stop } from '../support/process.js';
import { request } from '../support/server.js';

const platformKey = 'e2e-platform-key-0123456789';

/** The service as a user starts it (`npm start` runs `tsx src/main.ts`), on loopback, with its own data dir. */
const startService = async (dataDir: string) => {
  const port = await freePort();
  const service = startTs('src/main.ts', [], {
    DATA_DIR: dataDir,
    PORT: String(port),
    HOST: '127.0.0.1',
    LOG_LEVEL: 'warn',
    PLATFORM_ADMIN_KEY: platformKey,
  });
  const url = `http://127.0.0.1:${port}`;
  await eventually(async () => (await fetch(`${url}/health`).catch(() => null))?.ok === true, 20_000);
  return { ...service, url };
};

describe('the service process', function () {
  // Each start may take up to 20 s on a loaded machine (tsx compiles at every start), and a test starts two.
  this.timeout(60_000);
  it('serves observations and keeps them across a restart', async () => {
    const { dir, remove } = tempDir();
    try {
      const first = await startService(dir);
      const tenant = await request(`${first.url}/v1/tenants`, {
        method: 'POST',
        body: { name: 'e2e', notificationEmail: 'ops@e2e.test' },
        headers: { 'X-API-Key': platformKey },
      });
      expect(tenant.status).to.equal(201);
      const headers = { 'X-API-Key': tenant.body.adminApiKey as string };
      const created = await request(`${first.url}/v1/tenants/${tenant.body.id}/observations`, {
        method: 'POST',
        body: { observedAt: '2026-05-01T09:30:00Z', notes: 'before restart' },
        headers,
      });
      expect(created.status).to.equal(201);
      expect(await stop(first.child, first.exited)).to.equal(0);

      const second = await startService(dir);
      try {
        const read = await request(`${second.url}${created.headers.get('location')}`, { headers });
        expect(read.body).to.deep.equal(created.body);
        const list = await request(
          `${second.url}/v1/tenants/${tenant.body.id}/observations?minPosition=${created.headers.get('x-position')}`,
          { headers },
        );
        expect(list.body.data.map((o: { id: string }) => o.id)).to.deep.equal([created.body.id]);
      } finally {
        await stop(second.child, second.exited);
      }
    } finally {
      remove();
    }
  });

  it('refuses to start in production without its secrets, with exit code 2', async () => {
    const { dir, remove } = tempDir();
    try {
      const service = startTs('src/main.ts', [], {
        DATA_DIR: dir,
        PORT: String(await freePort()),
        NODE_ENV: 'production',
        CURSOR_SECRET: '',
      });
      expect(await service.exited).to.equal(2);
      expect(service.output.stderr).to.match(/PLATFORM_ADMIN_KEY, CURSOR_SECRET, SIGNING_KEYS_FILE/);
    } finally {
      remove();
    }
  });
});
