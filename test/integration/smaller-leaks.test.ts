import { expect } from 'chai';
import { startReceiver, type Receiver } from '../support/receiver.js';
import { request, startTestServer, withTenant, type TestServer } from '../support/server.js';
import { eventually, sleep } from '../support/wait.js';

/**
 * The smaller findings of the security review (issue 11), each on the running service: subscriptions need
 * the read scope of what they receive, prototype names as ids name nothing, webhook hosts are refused in
 * one voice, list cursors belong to their tenant, and impossible dates are refused.
 */

const secret = 'a-secret-of-16-chars-or-more';
const prototypeNames = ['__proto__', 'constructor', 'toString', 'hasOwnProperty'];

describe('the smaller leaks found by the security review', function () {
  this.timeout(30_000);
  let server: TestServer;
  let receiver: Receiver;
  let tenant: Awaited<ReturnType<typeof withTenant>>;
  const url = (path: string) => `${server.url}/v1/tenants/${tenant.tenantId}${path}`;
  const as = (key: string, init: Parameters<typeof request>[1] = {}) => ({
    ...init,
    headers: { 'X-API-Key': key, ...init.headers },
  });
  const webhookEvents = async () =>
    (await server.stores.eventStore.readStream(`webhooks-${tenant.tenantId}_set`)).map((event) => event.type);

  beforeEach(async () => {
    server = await startTestServer({ WEBHOOK_ALLOW_HTTP: 'true', WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true' });
    receiver = await startReceiver(secret);
    tenant = await withTenant(server);
  });
  afterEach(async () => {
    await receiver.close();
    await server.close();
  });

  describe('when a subscription lists event types', () => {
    it('refuses a key with webhooks:manage alone with 403 naming observations:read, and writes nothing', async () => {
      const key = await tenant.key(['webhooks:manage']);
      const before = await webhookEvents();
      const response = await request(
        url('/webhooks'),
        as(key, { method: 'POST', body: { url: receiver.url, events: ['observation.created'], secret } }),
      );
      expect(response.status, JSON.stringify(response.body)).to.equal(403);
      expect(response.body.requiredScope).to.equal('observations:read');
      expect(response.body.detail).to.include('observations:read');
      const cv = await request(
        url('/webhooks'),
        as(key, { method: 'POST', body: { url: receiver.url, events: ['cv.job.failed'], secret } }),
      );
      expect(cv.status).to.equal(403);
      expect(cv.body.requiredScope).to.equal('cv:read');
      expect(await webhookEvents()).to.deep.equal(before);
    });

    it('accepts a key that also holds the read scope', async () => {
      const key = await tenant.key(['webhooks:manage', 'observations:read']);
      const response = await request(
        url('/webhooks'),
        as(key, { method: 'POST', body: { url: receiver.url, events: ['visit.submitted'], secret } }),
      );
      expect(response.status, JSON.stringify(response.body)).to.equal(201);
    });

    it('disables the subscription, with a reason, once its creator key is revoked, and delivers nothing more', async () => {
      const key = await tenant.key(['webhooks:manage', 'observations:read']);
      const created = await request(
        url('/webhooks'),
        as(key, { method: 'POST', body: { url: receiver.url, events: ['observation.created'], secret } }),
      );
      expect(created.status).to.equal(201);
      const record = (notes: string) =>
        request(
          url('/observations'),
          as(tenant.adminKey, { method: 'POST', body: { observedAt: '2026-05-01T09:30:00Z', notes } }),
        );
      await record('before');
      await receiver.waitFor(1);

      const keyId = key.split('.')[1]!;
      const revoked = await request(url(`/api-keys/${keyId}`), as(tenant.adminKey, { method: 'DELETE' }));
      expect(revoked.status).to.equal(204);
      await record('after');
      const disabled = await eventually(async () => {
        const read = await request(url(`/webhooks/${created.body.id}`), as(tenant.adminKey));
        return read.body.status === 'disabled' ? read.body : undefined;
      });
      expect(disabled.disabledReason).to.include('observations:read').and.to.include('revoked');
      // On purpose: time for a delivery that should not happen to arrive.
      await sleep(500);
      expect(receiver.received).to.have.length(1);
      expect(await webhookEvents()).to.include('WebhookDisabled');
    });
  });

  describe("when a subscription's owner is a user", () => {
    it('disables it with a reason once the user is disabled, and delivers nothing', async () => {
      const email = 'hooks@acme.test';
      const password = 'a long enough password';
      const user = await request(
        url('/users'),
        as(tenant.adminKey, {
          method: 'POST',
          body: { email, password, scopes: ['webhooks:manage', 'observations:read'] },
        }),
      );
      expect(user.status, JSON.stringify(user.body)).to.equal(201);
      const login = await request(`${server.url}/v1/auth/token`, {
        method: 'POST',
        body: { email, password, tenantId: tenant.tenantId },
      });
      expect(login.status, JSON.stringify(login.body)).to.equal(200);
      const created = await request(url('/webhooks'), {
        method: 'POST',
        body: { url: receiver.url, events: ['observation.created'], secret },
        headers: { Authorization: `Bearer ${login.body.accessToken as string}` },
      });
      expect(created.status, JSON.stringify(created.body)).to.equal(201);
      const disabledUser = await request(
        url(`/users/${user.body.id as string}/disable`),
        as(tenant.adminKey, { method: 'POST' }),
      );
      expect(disabledUser.status).to.equal(200);
      await request(
        url('/observations'),
        as(tenant.adminKey, { method: 'POST', body: { observedAt: '2026-05-01T09:30:00Z' } }),
      );
      const disabled = await eventually(async () => {
        const read = await request(url(`/webhooks/${created.body.id}`), as(tenant.adminKey));
        return read.body.status === 'disabled' ? read.body : undefined;
      });
      expect(disabled.disabledReason).to.include(`the user ${user.body.id as string} was disabled`);
      // On purpose: time for a delivery that should not happen to arrive.
      await sleep(300);
      expect(receiver.received).to.have.length(0);
    });

    it('refuses to enable a disabled subscription for a credential without the read scope, and lets one with it take over', async () => {
      const key = await tenant.key(['webhooks:manage', 'observations:read']);
      const created = await request(
        url('/webhooks'),
        as(key, { method: 'POST', body: { url: receiver.url, events: ['observation.created'], secret } }),
      );
      await request(url(`/api-keys/${key.split('.')[1]!}`), as(tenant.adminKey, { method: 'DELETE' }));
      await request(
        url('/observations'),
        as(tenant.adminKey, { method: 'POST', body: { observedAt: '2026-05-01T09:30:00Z' } }),
      );
      await eventually(async () => {
        const read = await request(url(`/webhooks/${created.body.id}`), as(tenant.adminKey));
        return read.body.status === 'disabled' ? true : undefined;
      });
      const manageOnly = await tenant.key(['webhooks:manage']);
      const refused = await request(
        url(`/webhooks/${created.body.id}/enable`),
        as(manageOnly, { method: 'POST' }),
      );
      expect(refused.status).to.equal(403);
      expect(refused.body.requiredScope).to.equal('observations:read');
      const enabled = await request(
        url(`/webhooks/${created.body.id}/enable`),
        as(tenant.adminKey, { method: 'POST' }),
      );
      expect(enabled.status).to.equal(200);
      await request(
        url('/observations'),
        as(tenant.adminKey, { method: 'POST', body: { observedAt: '2026-05-01T10:30:00Z' } }),
      );
      await receiver.waitFor(1);
    });
  });

  describe('when an id is the name of a property of Object.prototype', () => {
    it('answers 404 to reading, deleting, enabling and listing deliveries, and appends nothing', async () => {
      await request(
        url('/webhooks'),
        as(tenant.adminKey, {
          method: 'POST',
          body: { url: receiver.url, events: ['observation.created'], secret },
        }),
      );
      const before = await webhookEvents();
      const head = await server.stores.eventStore.headPosition();
      for (const id of prototypeNames) {
        for (const [method, path] of [
          ['GET', `/webhooks/${id}`],
          ['DELETE', `/webhooks/${id}`],
          ['POST', `/webhooks/${id}/enable`],
          ['GET', `/webhooks/${id}/deliveries`],
          ['POST', `/webhooks/${id}/deliveries/${id}/redeliver`],
        ] as const) {
          const response = await request(url(path), as(tenant.adminKey, { method }));
          expect(response.status, `${method} ${path}: ${JSON.stringify(response.body)}`).to.equal(404);
        }
      }
      expect(await webhookEvents()).to.deep.equal(before);
      expect(await server.stores.eventStore.headPosition()).to.equal(head);
    });
  });

  describe('when a webhook URL names a host that is refused', () => {
    it('says the same for an internal name, a nonexistent name and a private address', async () => {
      await server.close();
      // Loopback as in production: outside it, a loopback receiver is allowed (docs/webhooks.md).
      server = await startTestServer({ WEBHOOK_ALLOW_HTTP: 'true', WEBHOOK_ALLOW_LOOPBACK: 'false' });
      tenant = await withTenant(server);
      const messages = [];
      for (const target of [
        'http://localhost/hooks',
        'http://no-such-host.invalid/hooks',
        'http://10.0.0.1/hooks',
        'http://[::1]/hooks',
      ]) {
        const response = await request(
          url('/webhooks'),
          as(tenant.adminKey, {
            method: 'POST',
            body: { url: target, events: ['observation.created'], secret },
          }),
        );
        expect(response.status, target).to.equal(400);
        messages.push(JSON.stringify(response.body.errors));
      }
      expect(new Set(messages).size, messages.join('\n')).to.equal(1);
    });
  });

  describe("when a list cursor is used on another tenant's list", () => {
    it('answers 400 naming the cursor', async () => {
      const other = await withTenant(server, 'other');
      for (const owner of [tenant, other]) {
        for (const notes of ['one', 'two']) {
          const created = await request(
            `${server.url}/v1/tenants/${owner.tenantId}/observations`,
            as(owner.adminKey, { method: 'POST', body: { observedAt: '2026-05-01T09:30:00Z', notes } }),
          );
          expect(created.status).to.equal(201);
        }
      }
      const page = await eventually(async () => {
        const response = await request(
          url('/observations?limit=1&minPosition=0'),
          as(tenant.adminKey, { headers: {} }),
        );
        return response.body.nextCursor ? response.body : undefined;
      });
      const own = await request(
        url(`/observations?limit=1&cursor=${encodeURIComponent(page.nextCursor)}`),
        as(tenant.adminKey),
      );
      expect(own.status).to.equal(200);
      const foreign = await request(
        `${server.url}/v1/tenants/${other.tenantId}/observations?limit=1&cursor=${encodeURIComponent(page.nextCursor)}`,
        as(other.adminKey),
      );
      expect(foreign.status, JSON.stringify(foreign.body)).to.equal(400);
      expect(foreign.body.errors[0].path).to.equal('cursor');
    });
  });

  describe('when a date does not exist in the calendar', () => {
    it('refuses February 30 and April 31 with 400 naming the field, and writes nothing', async () => {
      const head = await server.stores.eventStore.headPosition();
      for (const observedAt of ['2026-02-30T10:00:00Z', '2026-04-31T10:00:00Z', '2025-02-29T00:00:00Z']) {
        const response = await request(
          url('/observations'),
          as(tenant.adminKey, { method: 'POST', body: { observedAt } }),
        );
        expect(response.status, observedAt).to.equal(400);
        expect(response.body.errors[0].path).to.equal('observedAt');
      }
      const query = await request(
        url('/observations?observedFrom=2026-02-30T00:00:00Z'),
        as(tenant.adminKey),
      );
      expect(query.status).to.equal(400);
      expect(query.body.errors[0].path).to.equal('observedFrom');
      expect(await server.stores.eventStore.headPosition()).to.equal(head);
      const leap = await request(
        url('/observations'),
        as(tenant.adminKey, { method: 'POST', body: { observedAt: '2028-02-29T23:59:59+01:00' } }),
      );
      expect(leap.status).to.equal(201);
    });
  });
});
