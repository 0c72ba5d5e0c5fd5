import { expect } from 'chai';
import Database from 'better-sqlite3';
import { join } from 'node:path';
import { expectForbidden } from '../support/auth.js';
import { request, startTestServer, withTenant, type TestServer } from '../support/server.js';

describe('GET /v1/tenants/{t}/audit/verification', () => {
  let server: TestServer;
  let tenant: Awaited<ReturnType<typeof withTenant>>;
  let observationId: string;
  const verification = (key: string) =>
    request(`${server.url}/v1/tenants/${tenant.tenantId}/audit/verification`, {
      headers: { 'X-API-Key': key },
    });

  before(async () => {
    server = await startTestServer();
    tenant = await withTenant(server);
    const created = await request(`${server.url}/v1/tenants/${tenant.tenantId}/observations`, {
      method: 'POST',
      body: { observedAt: '2026-05-01T09:30:00Z', notes: 'first' },
      headers: { 'X-API-Key': tenant.adminKey },
    });
    observationId = created.body.id as string;
  });
  after(() => server.close());

  it('reports an untouched history as whole, with what it checked', async () => {
    const response = await verification(tenant.adminKey);
    expect(response.status, JSON.stringify(response.body)).to.equal(200);
    expect(response.body).to.deep.include({ tenantId: tenant.tenantId, ok: true, broken: null, digests: 0 });
    expect(response.body.events).to.be.greaterThan(1);
    expect(response.body.streams).to.be.greaterThan(1);
  });

  it('is refused to a key without the admin scope', async () => {
    expectForbidden(await verification(await tenant.key(['observations:read'])), 'admin');
  });

  it('names the first broken link once an event was edited in the store', async () => {
    const db = new Database(join(server.dataDir, 'events.db'));
    const stream = `observation-${tenant.tenantId}_${observationId}`;
    db.prepare(
      `UPDATE events SET data = json_set(data, '$.notes', 'forged') WHERE stream_name = ? AND stream_version = 0`,
    ).run(stream);
    db.close();
    const response = await verification(tenant.adminKey);
    expect(response.status).to.equal(200);
    expect(response.body.ok).to.equal(false);
    expect(response.body.broken).to.deep.include({
      streamName: stream,
      version: 0,
      reason: 'the event does not match its hash',
    });
  });
});

describe('GET /v1/tenants/{t}/audit/verification, several at once', () => {
  let server: TestServer;
  let pagesRead = 0;
  const verify = (tenant: { tenantId: string; adminKey: string }, signal?: AbortSignal) =>
    fetch(`${server.url}/v1/tenants/${tenant.tenantId}/audit/verification`, {
      headers: { 'X-API-Key': tenant.adminKey },
      ...(signal ? { signal } : {}),
    });
  const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

  before(async () => {
    server = await startTestServer();
    // A long history, in little: every event of a verification's read comes as a page of its own, 150 ms
    // after the one before.
    const store = server.stores.eventStore;
    const read = store.readTenantByStream.bind(store);
    store.readTenantByStream = async function* (tenantId, options) {
      for await (const page of read(tenantId, options))
        for (const event of page) {
          await pause(150);
          pagesRead += 1;
          yield [event];
        }
    };
  });
  after(() => server.close());

  it('runs one per tenant and two in all: another tenant is not kept waiting by the first', async () => {
    const [a, b, c] = [await withTenant(server), await withTenant(server), await withTenant(server)];
    const first = verify(a);
    await pause(50);
    const again = await verify(a);
    expect(again.status).to.equal(503);
    expect(((await again.json()) as { detail: string }).detail).to.match(/of this tenant/);
    const other = verify(b);
    await pause(50);
    const third = await verify(c);
    expect(third.status).to.equal(503);
    expect(third.headers.get('retry-after')).to.equal('5');
    expect(((await third.json()) as { detail: string }).detail).to.match(/Other verifications/);
    expect((await first).status).to.equal(200);
    expect((await other).status).to.equal(200);
    expect((await verify(c)).status).to.equal(200);
  });

  it('stops reading when the caller leaves, and frees the tenant at once', async () => {
    const tenant = await withTenant(server);
    const left = new AbortController();
    const abandoned = verify(tenant, left.signal).catch((error: unknown) => error);
    await pause(200);
    left.abort();
    expect(await abandoned).to.be.instanceOf(Error);
    await pause(300);
    const readByThen = pagesRead;
    await pause(600);
    expect(pagesRead, 'pages read after the caller left').to.equal(readByThen);
    expect((await verify(tenant)).status).to.equal(200);
  });
});
