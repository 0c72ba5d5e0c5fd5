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
