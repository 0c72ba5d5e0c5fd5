import { expect } from 'chai';
import { randomBytes } from 'node:crypto';
import { startReceiver, type Receiver } from '../support/receiver.js';
import { request, startTestServer, withTenant, type TestServer } from '../support/server.js';

/**
 * A test event must never change the subscription it tests (docs/webhooks.md, "Test events": it "never
 * counts towards disabling the subscription"), whoever sends it and whichever example type they choose.
 */
describe('a test event, sent by a credential other than the owner', function () {
  this.timeout(30_000);

  let server: TestServer;
  let receiver: Receiver;
  let tenantId: string;
  let adminKey: string;
  let key: (scopes: string[]) => Promise<string>;
  const secret = `whsec_${randomBytes(32).toString('base64')}`;

  beforeEach(async () => {
    server = await startTestServer({ WEBHOOK_TIMEOUT: '2s' });
    receiver = await startReceiver(secret);
    ({ tenantId, adminKey, key } = await withTenant(server));
  });
  afterEach(async () => {
    await receiver.close();
    await server.close();
  });

  const api = (path: string, apiKey: string, init: Parameters<typeof request>[1] = {}) =>
    request(`${server.url}/v1/tenants/${tenantId}/webhooks${path}`, {
      ...init,
      headers: { 'X-API-Key': apiKey, ...init.headers },
    });

  it('a test event of a type its owner may not read leaves the subscription active, sends nothing, and says why in a 409 problem', async () => {
    // The owner reads observations only, and lists only observation.created.
    const owner = await key(['webhooks:manage', 'observations:read']);
    const created = await api('', owner, {
      method: 'POST',
      body: { url: receiver.url, events: ['observation.created'], secret },
    });
    expect(created.status, JSON.stringify(created.body)).to.equal(201);
    const { id } = created.body as { id: string };

    // Anyone with webhooks:manage may send a test event, of any type.
    const manager = await key(['webhooks:manage']);
    const tested = await api(`/${id}/test`, manager, { method: 'POST', body: { type: 'cv.job.completed' } });
    expect(tested.status, JSON.stringify(tested.body)).to.equal(409);
    expect(tested.headers.get('content-type')).to.match(/^application\/problem\+json/);
    expect(tested.body.detail).to.include('cv:read');
    expect(receiver.received).to.have.length(0);

    // The subscription is untouched: still active, with no disabledReason.
    const after = await api(`/${id}`, adminKey);
    expect(after.body).to.include({ status: 'active', disabledReason: null });
    const events = await server.stores.eventStore.readAll({
      filter: { tenantId, eventTypes: ['WebhookDisabled'] },
    });
    expect(events.events).to.deep.equal([]);

    // A type it may read is still sent, verified by the receiver.
    const ok = await api(`/${id}/test`, manager, { method: 'POST', body: { type: 'observation.created' } });
    expect(ok.status, JSON.stringify(ok.body)).to.equal(200);
    expect(ok.body).to.include({ ok: true, statusCode: 204 });
    expect(receiver.received).to.have.length(1);
    expect(receiver.received[0]!.verified).to.equal(true);
  });
});
