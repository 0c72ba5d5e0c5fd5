import { expect } from 'chai';
import { createHmac, randomBytes } from 'node:crypto';
import { Webhook as StandardWebhook } from 'standardwebhooks';
import { Webhook as SvixWebhook } from 'svix';
import { responseBodyLimit } from '../../src/webhooks/sender.js';
import { openApiValidator, type OpenApiValidator } from '../support/openapi.js';
import { startReceiver, type Answer, type Receiver, type Received } from '../support/receiver.js';
import { request, startTestServer, withTenant, type TestServer } from '../support/server.js';
import { eventually } from '../support/wait.js';

/**
 * Deliveries verified by the Standard Webhooks libraries the receivers' guide shows (`standardwebhooks`, and
 * `svix`, which implements the same scheme), with the secret exactly as the API showed it: generated,
 * chosen in the standard's form, or chosen plain. Also rotation, and `POST …/test`.
 */
const verifiers = {
  standardwebhooks: (secret: string, received: Received) =>
    new StandardWebhook(secret).verify(received.rawBody, headersOf(received)),
  svix: (secret: string, received: Received) =>
    new SvixWebhook(secret).verify(received.rawBody, headersOf(received)),
};

const headersOf = (received: Received): Record<string, string> => ({
  'webhook-id': String(received.headers['webhook-id']),
  'webhook-timestamp': String(received.headers['webhook-timestamp']),
  'webhook-signature': String(received.headers['webhook-signature']),
});

/** X-Service-Signature as the seed defines it: hex HMAC-SHA256 of the raw body, keyed with the key bytes. */
const serviceSignature = (key: Buffer, rawBody: string) =>
  createHmac('sha256', key).update(rawBody).digest('hex');

const keyOf = (standardSecret: string) => Buffer.from(standardSecret.slice('whsec_'.length), 'base64');

describe('webhook secrets in the Standard Webhooks form, verified by standardwebhooks and svix', function () {
  this.timeout(30_000);
  let server: TestServer;
  let tenantId: string;
  let key: string;
  let keyWith: (scopes: string[]) => Promise<string>;
  let validator: OpenApiValidator;
  const receivers: Receiver[] = [];

  before(async () => {
    server = await startTestServer({ WEBHOOK_ALLOW_HTTP: 'true', WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true' });
    const tenant = await withTenant(server);
    tenantId = tenant.tenantId;
    keyWith = tenant.key;
    key = await tenant.key(['webhooks:manage', 'observations:read', 'observations:write', 'cv:read']);
    validator = openApiValidator((await request(`${server.url}/v1/openapi.json`)).body);
  });
  afterEach(async () => {
    await Promise.all(receivers.splice(0).map((receiver) => receiver.close()));
  });
  after(async () => server.close());

  const api = (path: string, init: Parameters<typeof request>[1] = {}) =>
    request(`${server.url}/v1/tenants/${tenantId}${path}`, {
      ...init,
      headers: { 'X-API-Key': key, ...init.headers },
    });

  /**
   * A receiver that records everything; with the subscription's secret, it answers as told when the
   * signatures verify (401 when not), and without it, 401 to everything.
   */
  const receiver = async (answer: (n: number) => Answer = () => 204, secret = 'unknown') => {
    const started = await startReceiver(secret, answer);
    receivers.push(started);
    return started;
  };

  const subscribe = async (url: string, secret?: string, events = ['observation.created']) => {
    const response = await api('/webhooks', {
      method: 'POST',
      body: { url, events, ...(secret ? { secret } : {}) },
    });
    expect(response.status, JSON.stringify(response.body)).to.equal(201);
    return response.body as { id: string; secret: string };
  };

  const observe = async () => {
    const response = await api('/observations', {
      method: 'POST',
      body: { observedAt: '2026-05-01T07:30:00Z', attributes: { species: 'fox' } },
    });
    expect(response.status, JSON.stringify(response.body)).to.equal(201);
  };

  /** The signatures a receiver following docs/webhooks.md checks, for the secret as the API showed it. */
  const expectVerified = (received: Received, shownSecret: string) => {
    for (const [name, verify] of Object.entries(verifiers)) {
      expect(() => verify(shownSecret, received), name).not.to.throw();
    }
    expect(received.headers['x-service-signature']).to.equal(
      serviceSignature(keyOf(shownSecret), received.rawBody),
    );
  };

  it('generates a secret when none is given: whsec_ and the base64 of 32 random bytes, shown once', async () => {
    const target = await receiver();
    const created = await subscribe(target.url);
    expect(created.secret).to.match(/^whsec_[A-Za-z0-9+/]{43}=$/);
    expect(keyOf(created.secret)).to.have.length(32);
    expect((await subscribe(target.url)).secret).not.to.equal(created.secret);
    const read = await api(`/webhooks/${created.id}`);
    expect(read.body).not.to.have.any.keys('secret', 'sealedSecret');
    const list = await api('/webhooks');
    expect(JSON.stringify(list.body)).not.to.include(created.secret.slice(6));
    const history = await api('/events');
    expect(JSON.stringify(history.body)).not.to.include(created.secret.slice(6));
  });

  it('signs real deliveries that both libraries verify with the generated secret', async () => {
    const target = await receiver();
    const { secret } = await subscribe(target.url);
    await observe();
    const [delivery] = await target.waitFor(1);
    expectVerified(delivery!, secret);
  });

  it('decodes a chosen whsec_ secret as the standard says', async () => {
    const target = await receiver();
    const chosen = `whsec_${Buffer.from('a chosen key of 24+ bytes!!').toString('base64')}`;
    const created = await subscribe(target.url, chosen);
    expect(created.secret).to.equal(chosen);
    await observe();
    const [delivery] = await target.waitFor(1);
    expectVerified(delivery!, chosen);
  });

  it('keys a plain secret with its UTF-8 bytes, and shows it in the form the libraries take', async () => {
    const target = await receiver();
    const plain = 'a-plain-secret-of-16-or-more';
    const created = await subscribe(target.url, plain);
    expect(created.secret).to.equal(`whsec_${Buffer.from(plain).toString('base64')}`);
    await observe();
    const [delivery] = await target.waitFor(1);
    expectVerified(delivery!, created.secret);
    expect(delivery!.headers['x-service-signature']).to.equal(
      createHmac('sha256', plain).update(delivery!.rawBody).digest('hex'),
    );
  });

  for (const [secret, problem] of [
    ['whsec_not base64!', 'must be whsec_ followed by standard base64 (RFC 4648 §4)'],
    [
      `whsec_${Buffer.alloc(16, 1).toString('base64')}`,
      'must encode 24 to 64 bytes after whsec_ (this one encodes 16)',
    ],
    [
      `whsec_${Buffer.alloc(65, 1).toString('base64')}`,
      'must encode 24 to 64 bytes after whsec_ (this one encodes 65)',
    ],
    [
      'short',
      'must be whsec_ and the base64 of 24 to 64 random bytes, or a plain secret of 16 to 256 characters',
    ],
  ] as const) {
    it(`refuses the secret ${secret.slice(0, 20)}… with 400 naming the problem`, async () => {
      const response = await api('/webhooks', {
        method: 'POST',
        body: { url: 'http://127.0.0.1:9/hooks', events: ['observation.created'], secret },
      });
      expect(response.status).to.equal(400);
      expect(response.body.errors).to.deep.equal([{ path: 'secret', message: problem }]);
    });
  }

  it('rotates the secret: the new one is shown once and signs; the old one still verifies for 24 hours', async () => {
    const target = await receiver();
    const { id, secret: before } = await subscribe(target.url);
    const rotated = await api(`/webhooks/${id}/secret/rotate`, { method: 'POST' });
    expect(rotated.status, JSON.stringify(rotated.body)).to.equal(200);
    const after = rotated.body.secret as string;
    expect(after)
      .to.match(/^whsec_/)
      .and.not.equal(before);
    expect(Date.parse(rotated.body.previousSecretExpiresAt) - Date.now()).to.be.closeTo(
      24 * 3600_000,
      60_000,
    );
    expect(rotated.headers.get('etag')).to.match(/^"\d+"$/);
    await observe();
    const [delivery] = await target.waitFor(1);
    expectVerified(delivery!, after);
    // The old secret verifies through the second signature of the header, during the grace period.
    for (const [name, verify] of Object.entries(verifiers))
      expect(() => verify(before, delivery!), name).not.to.throw();
    expect(String(delivery!.headers['webhook-signature']).split(' ')).to.have.length(2);
  });

  it('rotates to a chosen secret, and refuses a rotation of another tenant’s or an unknown subscription', async () => {
    const target = await receiver();
    const { id } = await subscribe(target.url);
    const chosen = `whsec_${randomBytes(32).toString('base64')}`;
    const rotated = await api(`/webhooks/${id}/secret/rotate`, { method: 'POST', body: { secret: chosen } });
    expect(rotated.body.secret).to.equal(chosen);
    expect(
      (await api('/webhooks/w_00000000000000000000000000/secret/rotate', { method: 'POST' })).status,
    ).to.equal(404);
    const other = await withTenant(server, 'other');
    const foreign = await request(`${server.url}/v1/tenants/${other.tenantId}/webhooks/${id}/secret/rotate`, {
      method: 'POST',
      headers: { 'X-API-Key': other.adminKey },
    });
    expect(foreign.status).to.equal(404);
    const bad = await api(`/webhooks/${id}/secret/rotate`, { method: 'POST', body: { secret: 'whsec_!!' } });
    expect(bad.status).to.equal(400);
  });

  describe('POST …/webhooks/{id}/test', () => {
    it('sends a signed example event of the chosen type and answers with the outcome and the receiver’s body', async () => {
      const secret = `whsec_${randomBytes(32).toString('base64')}`;
      const target = await receiver(() => ({ status: 200, body: 'thanks' }), secret);
      const { id } = await subscribe(target.url, secret);
      const response = await api(`/webhooks/${id}/test`, {
        method: 'POST',
        body: { type: 'cv.job.completed' },
      });
      expect(response.status, JSON.stringify(response.body)).to.equal(200);
      expect(response.body).to.include({
        ok: true,
        statusCode: 200,
        error: null,
        responseBody: 'thanks',
        eventType: 'cv.job.completed',
      });
      expect(response.body.durationMs).to.be.a('number');
      expect(response.body.eventId).to.match(/^evt_test_/);
      expect(target.received).to.have.length(1);
      const delivery = target.received[0]!;
      expectVerified(delivery, secret);
      expect(delivery.body).to.include({ id: response.body.eventId, type: 'cv.job.completed', tenantId });
      // It has the shape of a real delivery of its type, as the document's webhooks section declares it.
      const webhook = (await request(`${server.url}/v1/openapi.json`)).body.webhooks['cv.job.completed'].post;
      expect(
        validator.errorsOf(webhook.requestBody.content['application/json'].schema, delivery.body),
      ).to.deep.equal([]);
      // It is in the delivery log, with its attempt.
      const attempt = await eventually(async () => {
        const log = await api(`/webhooks/${id}/deliveries`);
        return log.body.data.find((item: { eventId: string }) => item.eventId === response.body.eventId);
      });
      expect(attempt).to.include({
        deliveryId: response.body.deliveryId,
        status: 'succeeded',
        statusCode: 200,
        responseBody: 'thanks',
      });
    });

    it('defaults to the subscription’s first type, and a failure is reported, not retried and not held against it', async () => {
      const long = 'é'.repeat(3000);
      const secret = `whsec_${randomBytes(32).toString('base64')}`;
      const target = await receiver(() => ({ status: 500, body: long }), secret);
      const { id } = await subscribe(target.url, secret, ['visit.submitted', 'observation.created']);
      const response = await api(`/webhooks/${id}/test`, { method: 'POST' });
      expect(response.status).to.equal(200);
      expect(response.body).to.include({
        ok: false,
        statusCode: 500,
        error: 'HTTP 500',
        eventType: 'visit.submitted',
      });
      // The first bytes, cut at a whole character.
      expect(Buffer.byteLength(response.body.responseBody)).to.be.at.most(responseBodyLimit);
      expect(response.body.responseBody).to.equal('é'.repeat(responseBodyLimit / 2));
      const [attempt, ...more] = await eventually(async () => {
        const log = await api(`/webhooks/${id}/deliveries`);
        return log.body.data.length > 0 ? log.body.data : undefined;
      });
      expect(more).to.deep.equal([]);
      expect(attempt).to.include({ status: 'failed', nextAttemptAt: null });
      expect((await api(`/webhooks/${id}`)).body.status).to.equal('active');
      expect(target.received).to.have.length(1);
    });

    it('reports a receiver that cannot be reached, refuses unknown types, and needs webhooks:manage', async () => {
      const { id } = await subscribe('http://127.0.0.1:9/hooks');
      const unreachable = await api(`/webhooks/${id}/test`, {
        method: 'POST',
        body: { type: 'observation.created' },
      });
      expect(unreachable.status).to.equal(200);
      expect(unreachable.body).to.include({ ok: false, statusCode: null, responseBody: null });
      expect(unreachable.body.error).to.be.a('string');
      const unknown = await api(`/webhooks/${id}/test`, {
        method: 'POST',
        body: { type: 'observation.deleted' },
      });
      expect(unknown.status).to.equal(400);
      expect(unknown.body.errors[0].path).to.equal('type');
      const reader = await keyWith(['observations:read']);
      const forbidden = await api(`/webhooks/${id}/test`, {
        method: 'POST',
        headers: { 'X-API-Key': reader },
      });
      expect(forbidden.status).to.equal(403);
      expect((await api('/webhooks/w_00000000000000000000000000/test', { method: 'POST' })).status).to.equal(
        404,
      );
    });
  });
});
