import { expect } from 'chai';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { pino } from 'pino';
import { streamName } from '../../src/core/streams.js';
import { outboxMailer } from '../../src/mail/mailer.js';
import { deliveriesProjection } from '../../projections/webhooks.js';
import { deliveryIdFor } from '../../src/webhooks/delivery.decider.js';
import { toExternal } from '../../src/webhooks/external.js';
import { webhookSender } from '../../src/webhooks/sender.js';
import { webhookWorker } from '../../src/webhooks/worker.js';
import { tempDir } from '../support/adapters.js';
import { freePort } from '../support/process.js';
import { testClock } from '../support/clock.js';
import { startReceiver, type Answer, type Received } from '../support/receiver.js';
import { request, startTestServer, withTenant, type TestServer } from '../support/server.js';
import { readableText, startSmtpServer } from '../support/smtp.js';
import { eventually, sleep } from '../support/wait.js';

const secret = 'whsec-test-0123456789abcdef';

/**
 * Fast retries: every delay is one second, and the sweep that makes retries runs each second.
 * The `sleep`s below are on purpose: once the expected requests have arrived, they give the sweep a turn or
 * two to send something it should not (a duplicate, a retry of a settled delivery, an event for a deleted,
 * disabled or other tenant's subscription). Nothing else shows that nothing more comes; the sweep runs on a
 * real timer, so the test clock cannot stand in for them.
 */
const fastEnv = {
  WEBHOOK_ALLOW_HTTP: 'true',
  WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true',
  WEBHOOK_RETRY_SCHEDULE: '1s,1s,1s,1s,1s',
  WEBHOOK_TIMEOUT: '500ms',
};

interface Attempt {
  id: string;
  deliveryId: string;
  webhookId: string;
  eventId: string;
  eventType: string;
  attempt: number;
  attemptedAt: string;
  status: 'succeeded' | 'failed';
  statusCode: number | null;
  durationMs: number;
  error: string | null;
  nextAttemptAt: string | null;
}

describe('webhook delivery', () => {
  /** Everything a test started, closed after it in reverse order (receivers before the service). */
  let cleanups: (() => Promise<void> | void)[] = [];
  afterEach(async () => {
    for (const cleanup of cleanups.reverse()) await cleanup();
    cleanups = [];
  });

  const receiver = async (answer?: (n: number, request: Received) => Answer, key = secret) => {
    const started = await startReceiver(key, answer);
    cleanups.push(() => started.close());
    return started;
  };

  /** A tenant's view of a running service: its API with a key that manages webhooks and writes observations. */
  const asTenant = (server: TestServer, tenantId: string, apiKey: string) => {
    const api = (path: string, init: Parameters<typeof request>[1] = {}) =>
      request(`${server.url}/v1/tenants/${tenantId}${path}`, {
        ...init,
        headers: { 'X-API-Key': apiKey, ...init.headers },
      });
    const subscribe = async (url: string, events: string[] = ['observation.created'], key = secret) => {
      const response = await api('/webhooks', { method: 'POST', body: { url, events, secret: key } });
      expect(response.status, JSON.stringify(response.body)).to.equal(201);
      return response.body as { id: string; status: string };
    };
    const observe = async (notes = 'a fox') => {
      const response = await api('/observations', {
        method: 'POST',
        body: { observedAt: '2026-05-01T09:30:00Z', notes },
      });
      expect(response.status, JSON.stringify(response.body)).to.equal(201);
      return response.body as { id: string; version: number };
    };
    const update = async (observationId: string, notes: string) => {
      const response = await api(`/observations/${observationId}`, { method: 'PATCH', body: { notes } });
      expect(response.status, JSON.stringify(response.body)).to.equal(200);
      return response.body as { id: string; version: number };
    };
    const subscription = async (webhookId: string) => (await api(`/webhooks/${webhookId}`)).body;
    /** The attempt log, once it holds at least `count` attempts (it is a read model, so it lags a little). */
    const attempts = async (webhookId: string, count: number, query = '') =>
      eventually(
        async () => {
          const response = await api(`/webhooks/${webhookId}/deliveries?limit=200${query}`);
          expect(response.status, JSON.stringify(response.body)).to.equal(200);
          const data = response.body.data as Attempt[];
          return data.length >= count ? data : undefined;
        },
        15_000,
        `${count} attempts in the log`,
      );
    /** The domain event an observation's creation recorded. */
    const recorded = async (observationId: string) =>
      (await server.stores.eventStore.readStream(streamName('observation', tenantId, observationId)))[0]!;
    return { server, tenantId, apiKey, api, subscribe, observe, update, subscription, attempts, recorded };
  };

  /** A service with one tenant; the service closes after the test (its DATA_DIR too, unless given). */
  const setup = async (env: Record<string, string> = {}, options: { dataDir?: string } = {}) => {
    const server = await startTestServer({ ...fastEnv, ...env }, options);
    let running = true;
    /** Stops the service, once: a test that restarts it stops it itself. */
    const stop = async () => {
      if (running) await server.close();
      running = false;
    };
    cleanups.push(stop);
    const tenant = await withTenant(server);
    const key = await tenant.key(['webhooks:manage', 'observations:read', 'observations:write']);
    return { ...asTenant(server, tenant.tenantId, key), stop };
  };

  /** The types of the events in a stream, in order. */
  const typesIn = async (server: TestServer, stream: string) =>
    (await server.stores.eventStore.readStream(stream)).map((event) => event.type);

  describe('a successful delivery', () => {
    it('POSTs the JSON envelope of the event, signed both ways, and logs the attempt', async () => {
      const hooks = await receiver();
      const t = await setup();
      const webhook = await t.subscribe(hooks.url);
      const observation = await t.observe('first fox');
      const [delivery] = await hooks.waitFor(1);

      const event = await t.recorded(observation.id);
      expect(delivery!.verified, 'both signatures verify').to.equal(true);
      expect(delivery!.status).to.equal(204);
      expect(delivery!.headers['content-type']).to.equal('application/json');
      expect(delivery!.body).to.have.all.keys('id', 'type', 'tenantId', 'timestamp', 'data');
      expect(delivery!.body).to.deep.include({
        id: `evt_${event.id}`,
        type: 'observation.created',
        tenantId: t.tenantId,
        timestamp: event.metadata.occurredAt,
      });
      expect(delivery!.body.data).to.deep.include({
        observationId: observation.id,
        observedAt: '2026-05-01T09:30:00.000Z',
        notes: 'first fox',
        version: 0,
      });
      expect(delivery!.headers['x-service-signature']).to.match(/^[0-9a-f]{64}$/);
      expect(delivery!.headers['webhook-id']).to.equal(delivery!.body.id);
      expect(Number(delivery!.headers['webhook-timestamp'])).to.be.closeTo(Date.now() / 1000, 30);
      expect(delivery!.headers['webhook-signature']).to.match(/^v1,[A-Za-z0-9+/]+=*$/);

      const [logged] = await t.attempts(webhook.id, 1);
      expect(logged).to.deep.include({
        deliveryId: deliveryIdFor(webhook.id, `evt_${event.id}`),
        webhookId: webhook.id,
        eventId: `evt_${event.id}`,
        eventType: 'observation.created',
        attempt: 1,
        status: 'succeeded',
        statusCode: 204,
        error: null,
        nextAttemptAt: null,
      });
      expect(logged!.durationMs).to.be.a('number').and.at.least(0);
      expect(Date.parse(logged!.attemptedAt)).to.be.closeTo(Date.now(), 10_000);

      expect(await typesIn(t.server, streamName('delivery', t.tenantId, logged!.deliveryId))).to.deep.equal([
        'DeliveryScheduled',
        'DeliveryAttemptClaimed',
        'DeliveryAttempted',
        'DeliverySucceeded',
      ]);
      // A sweep or two later, still exactly one request: normal operation never delivers twice.
      await sleep(1500);
      expect(hooks.received).to.have.length(1);
    });

    it('is refused by the receiver with 401 when one byte of the body is changed', async () => {
      const hooks = await receiver();
      const t = await setup();
      await t.subscribe(hooks.url);
      await t.observe();
      const [original] = await hooks.waitFor(1);
      const { rawBody, headers } = original!;
      const tampered = rawBody.replace('"observation.created"', '"observation.createD"');
      expect(tampered).not.to.equal(rawBody);
      expect(tampered.length).to.equal(rawBody.length);
      const forward = (body: string) =>
        fetch(hooks.url, {
          method: 'POST',
          body,
          headers: {
            'content-type': 'application/json',
            'x-service-signature': String(headers['x-service-signature']),
            'webhook-id': String(headers['webhook-id']),
            'webhook-timestamp': String(headers['webhook-timestamp']),
            'webhook-signature': String(headers['webhook-signature']),
          },
        });
      expect((await forward(tampered)).status).to.equal(401);
      // The same headers with the body as sent verify: it was the changed byte that failed.
      expect((await forward(rawBody)).status).to.equal(204);
    });

    it('is a failure when the receiver knows another secret, which it answers with 401', async () => {
      const hooks = await receiver(undefined, 'the-receivers-own-secret');
      const t = await setup({ WEBHOOK_RETRY_SCHEDULE: '10m' });
      const webhook = await t.subscribe(hooks.url);
      await t.observe();
      await hooks.waitFor(1);
      expect(hooks.received[0]!.verified).to.equal(false);
      const [logged] = await t.attempts(webhook.id, 1);
      expect(logged).to.deep.include({ status: 'failed', statusCode: 401, error: 'HTTP 401', attempt: 1 });
      expect(Date.parse(logged!.nextAttemptAt!) - Date.parse(logged!.attemptedAt)).to.be.closeTo(
        600_000,
        5_000,
      );
    });
  });

  describe('who receives what', () => {
    it('delivers only the event types a subscription lists', async () => {
      const created = await receiver();
      const updated = await receiver();
      const t = await setup();
      await t.subscribe(created.url, ['observation.created']);
      await t.subscribe(updated.url, ['observation.updated']);
      const observation = await t.observe();
      await t.update(observation.id, 'now two foxes');
      const [update] = await updated.waitFor(1);
      expect(update!.body).to.deep.include({ type: 'observation.updated' });
      expect(update!.body.data).to.deep.include({
        observationId: observation.id,
        changes: { notes: 'now two foxes' },
        version: 1,
      });
      const [creation] = await created.waitFor(1);
      expect(creation!.body.type).to.equal('observation.created');
      await sleep(500);
      expect(created.received).to.have.length(1);
      expect(updated.received).to.have.length(1);
    });

    it("never delivers another tenant's events", async () => {
      const hooks = await receiver();
      const t = await setup();
      const other = await withTenant(t.server, 'other');
      const otherTenant = asTenant(
        t.server,
        other.tenantId,
        await other.key(['webhooks:manage', 'observations:read', 'observations:write']),
      );
      await t.subscribe(hooks.url);
      await otherTenant.observe('not yours');
      // The projector takes events in order: once this one arrives, the other tenant's was passed over.
      const mine = await t.observe('yours');
      await hooks.waitFor(1);
      await sleep(300);
      expect(hooks.received.map((r) => r.body.data.observationId)).to.deep.equal([mine.id]);
      expect(hooks.received.map((r) => r.body.tenantId)).to.deep.equal([t.tenantId]);
    });

    it('does not deliver to a subscription an event that happened before it was created', async () => {
      const hooks = await receiver();
      const t = await setup();
      const before = await t.observe('before');
      await t.subscribe(hooks.url);
      const after = await t.observe('after');
      await hooks.waitFor(1);
      await sleep(300);
      expect(hooks.received.map((r) => r.body.data.observationId)).to.deep.equal([after.id]);
      expect(before.id).not.to.equal(after.id);
    });

    it('delivers nothing more to a deleted subscription', async () => {
      const hooks = await receiver();
      const t = await setup();
      const kept = await receiver();
      const webhook = await t.subscribe(hooks.url);
      await t.subscribe(kept.url);
      expect((await t.api(`/webhooks/${webhook.id}`, { method: 'DELETE' })).status).to.equal(204);
      await t.observe();
      await kept.waitFor(1);
      await sleep(300);
      expect(hooks.received).to.have.length(0);
    });
  });

  describe('failures', () => {
    it('retries on the schedule, six attempts in order about a second apart, then disables the subscription and e-mails the tenant over SMTP', async function () {
      this.timeout(30_000);
      const smtp = await startSmtpServer();
      cleanups.push(() => smtp.close());
      const hooks = await receiver(() => 500);
      const t = await setup({ SMTP_URL: smtp.url, MAIL_FROM: 'Webhooks <webhooks@service.test>' });
      const webhook = await t.subscribe(hooks.url);
      const observation = await t.observe();
      const requests = await hooks.waitFor(6, 20_000);

      // Every attempt carries the same event: the same envelope id and body.
      expect(new Set(requests.map((r) => r.headers['webhook-id'])).size).to.equal(1);
      expect(new Set(requests.map((r) => r.rawBody)).size).to.equal(1);
      expect(requests.every((r) => r.verified)).to.equal(true);
      for (let index = 1; index < requests.length; index += 1) {
        const gap = requests[index]!.at - requests[index - 1]!.at;
        expect(gap, `between attempts ${index} and ${index + 1}`).to.be.at.least(900);
      }

      const log = await t.attempts(webhook.id, 6);
      const inOrder = [...log].sort((a, b) => a.attempt - b.attempt);
      expect(inOrder.map((a) => a.attempt)).to.deep.equal([1, 2, 3, 4, 5, 6]);
      expect(
        log.map((a) => a.attempt),
        'newest first',
      ).to.deep.equal([6, 5, 4, 3, 2, 1]);
      for (const entry of inOrder) {
        expect(entry).to.deep.include({ status: 'failed', statusCode: 500, error: 'HTTP 500' });
      }
      for (const entry of inOrder.slice(0, 5)) {
        expect(Date.parse(entry.nextAttemptAt!) - Date.parse(entry.attemptedAt)).to.be.closeTo(1000, 50);
      }
      expect(inOrder[5]!.nextAttemptAt).to.equal(null);

      const disabled = await eventually(async () => {
        const current = await t.subscription(webhook.id);
        return current.status === 'disabled' ? current : undefined;
      });
      expect(disabled.disabledReason)
        .to.be.a('string')
        .and.match(/failed 6 times/);
      const deliveryStream = streamName('delivery', t.tenantId, inOrder[0]!.deliveryId);
      const steps = await typesIn(t.server, deliveryStream);
      expect(steps.filter((type) => type === 'DeliveryAttemptClaimed')).to.have.length(6);
      expect(steps.filter((type) => type === 'DeliveryAttempted')).to.have.length(6);
      expect(steps.at(-1)).to.equal('DeliveryRetriesExhausted');

      const [mail] = await smtp.waitFor(1);
      expect(mail!.to).to.deep.equal(['ops@acme.test']);
      expect(mail!.from).to.equal('webhooks@service.test');
      const text = readableText(mail!.raw).replace(/\r?\n[ \t]+/g, ' ');
      expect(text).to.match(/^To: ops@acme\.test$/m);
      expect(text).to.match(new RegExp(`^Subject: Webhook subscription ${webhook.id} was disabled$`, 'm'));
      expect(text).to.include(hooks.url);
      expect(text).to.include(disabled.disabledReason);
      expect(text).to.include(`/v1/tenants/${t.tenantId}/webhooks/${webhook.id}/enable`);
      const notified = await eventually(async () => {
        const types = await typesIn(t.server, streamName('webhooks', t.tenantId, 'set'));
        return types.includes('WebhookDisableNotified') ? types : undefined;
      });
      expect(notified.slice(-2)).to.deep.equal(['WebhookDisabled', 'WebhookDisableNotified']);

      // Disabled: a later event is not delivered.
      await t.observe('after the disable');
      await sleep(1500);
      expect(hooks.received).to.have.length(6);
      expect(smtp.messages).to.have.length(1);
      expect(observation.id).to.be.a('string');
    });

    it('still sends the disable e-mail when the SMTP server was down at the time of the disable', async function () {
      this.timeout(20_000);
      const port = await freePort();
      const hooks = await receiver(() => 500);
      const t = await setup({ WEBHOOK_RETRY_SCHEDULE: '100ms', SMTP_URL: `smtp://127.0.0.1:${port}` });
      const webhook = await t.subscribe(hooks.url);
      await t.observe();
      await eventually(async () =>
        (await t.subscription(webhook.id)).status === 'disabled' ? true : undefined,
      );
      await sleep(500);
      const smtp = await startSmtpServer(port);
      cleanups.push(() => smtp.close());
      const [mail] = await smtp.waitFor(1, 15_000);
      expect(mail!.to).to.deep.equal(['ops@acme.test']);
      expect(readableText(mail!.raw)).to.include(`Webhook subscription ${webhook.id} was disabled`);
      const types = await eventually(async () => {
        const found = await typesIn(t.server, streamName('webhooks', t.tenantId, 'set'));
        return found.includes('WebhookDisableNotified') ? found : undefined;
      });
      expect(types.filter((type) => type === 'WebhookDisableNotified')).to.have.length(1);
      await sleep(500);
      expect(smtp.messages).to.have.length(1);
    });

    it('writes the disable e-mail as an .eml file under DATA_DIR/outbox without SMTP_URL', async function () {
      this.timeout(15_000);
      const hooks = await receiver(() => 503);
      const t = await setup({ WEBHOOK_RETRY_SCHEDULE: '100ms' });
      const webhook = await t.subscribe(hooks.url);
      await t.observe();
      const outbox = join(t.server.dataDir, 'outbox');
      const [file] = await eventually(
        () => {
          const files = existsSync(outbox) ? readdirSync(outbox).filter((name) => name.endsWith('.eml')) : [];
          return Promise.resolve(files.length > 0 ? files : undefined);
        },
        10_000,
        'an .eml file in the outbox',
      );
      const text = readableText(readFileSync(join(outbox, file!), 'utf8')).replace(/\r?\n[ \t]+/g, ' ');
      expect(text).to.match(/^To: ops@acme\.test$/m);
      expect(text).to.match(new RegExp(`^Subject: Webhook subscription ${webhook.id} was disabled$`, 'm'));
      expect(text).to.include('failed 2 times');
      expect(hooks.received).to.have.length(2);
      expect((await t.subscription(webhook.id)).status).to.equal('disabled');
    });

    it('counts a receiver that does not answer within WEBHOOK_TIMEOUT as a failure, logged with the error and no status', async () => {
      const hooks = await receiver(() => 'hang');
      const t = await setup({ WEBHOOK_RETRY_SCHEDULE: '10m' });
      const webhook = await t.subscribe(hooks.url);
      await t.observe();
      const [logged] = await t.attempts(webhook.id, 1);
      expect(hooks.received).to.have.length(1);
      expect(logged).to.deep.include({
        attempt: 1,
        status: 'failed',
        statusCode: null,
        error: 'no answer within 500 ms',
      });
      expect(logged!.durationMs).to.be.at.least(450).and.below(5000);
      expect(logged!.nextAttemptAt).to.be.a('string');
    });

    it('counts a redirect as a failure and does not follow its Location', async () => {
      let elsewhere = '';
      const hooks = await receiver((_n, req) =>
        req.path === '/hooks' ? { status: 302, headers: { Location: elsewhere } } : 204,
      );
      elsewhere = `http://127.0.0.1:${hooks.port}/elsewhere`;
      const t = await setup({ WEBHOOK_RETRY_SCHEDULE: '10m' });
      const webhook = await t.subscribe(hooks.url);
      await t.observe();
      const [logged] = await t.attempts(webhook.id, 1);
      expect(logged).to.deep.include({ attempt: 1, status: 'failed', statusCode: 302, error: 'HTTP 302' });
      await sleep(300);
      expect(hooks.received.map((r) => r.path)).to.deep.equal(['/hooks']);
    });
  });

  describe('enabling a disabled subscription', () => {
    /** A subscription disabled by two failed attempts (100 ms schedule), whose receiver then recovers. */
    const disabledSubscription = async () => {
      let failing = true;
      const hooks = await receiver(() => (failing ? 500 : 204));
      const t = await setup({ WEBHOOK_RETRY_SCHEDULE: '100ms' });
      const webhook = await t.subscribe(hooks.url);
      const failed = await t.observe('the one that failed');
      await hooks.waitFor(2);
      await eventually(async () =>
        (await t.subscription(webhook.id)).status === 'disabled' ? true : undefined,
      );
      failing = false;
      return { hooks, t, webhook, failed };
    };

    it('with replayMissed, makes it active and delivers the events it missed while disabled, and the one that disabled it', async function () {
      this.timeout(20_000);
      const { hooks, t, webhook, failed } = await disabledSubscription();
      const missed = [await t.observe('missed one'), await t.observe('missed two')];
      await sleep(1200);
      expect(hooks.received).to.have.length(2);

      const enabled = await t.api(`/webhooks/${webhook.id}/enable`, {
        method: 'POST',
        body: { replayMissed: true },
      });
      expect(enabled.status, JSON.stringify(enabled.body)).to.equal(200);
      expect(enabled.body).to.include({ status: 'active', disabledReason: null, replayed: 3 });
      expect((await t.subscription(webhook.id)).status).to.equal('active');

      const requests = await hooks.waitFor(5);
      const replayed = requests.slice(2);
      expect(replayed.map((r) => r.body.data.observationId).sort()).to.deep.equal(
        [failed, ...missed].map((o) => o.id).sort(),
      );
      for (const [index, observation] of [failed, ...missed].entries()) {
        const event = await t.recorded(observation.id);
        expect(
          replayed.map((r) => r.body.id),
          `replayed ${index}`,
        ).to.include(`evt_${event.id}`);
      }
      expect(replayed.every((r) => r.verified && r.status === 204)).to.equal(true);

      // Active again: new events are delivered as usual.
      const next = await t.observe('after enabling');
      const [, , , , , sixth] = await hooks.waitFor(6);
      expect(sixth!.body.data.observationId).to.equal(next.id);
      await sleep(300);
      expect(hooks.received).to.have.length(6);
    });

    it('reads replayMissed from a body sent in chunks, without Content-Length', async function () {
      this.timeout(20_000);
      const { hooks, t, webhook, failed } = await disabledSubscription();
      const missed = await t.observe('missed');
      const body = new TextEncoder().encode(JSON.stringify({ replayMissed: true }));
      const response = await fetch(`${t.server.url}/v1/tenants/${t.tenantId}/webhooks/${webhook.id}/enable`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'X-API-Key': t.apiKey },
        body: new ReadableStream({
          start: (controller) => {
            controller.enqueue(body);
            controller.close();
          },
        }),
        duplex: 'half',
      });
      expect(response.status).to.equal(200);
      expect(await response.json()).to.include({ status: 'active', replayed: 2 });
      const replayed = (await hooks.waitFor(4)).slice(2);
      expect(replayed.map((r) => r.body.data.observationId).sort()).to.deep.equal(
        [failed.id, missed.id].sort(),
      );
    });

    it('without replayMissed, makes it active but does not deliver what it missed', async function () {
      this.timeout(20_000);
      const { hooks, t, webhook } = await disabledSubscription();
      await t.observe('missed');
      const enabled = await t.api(`/webhooks/${webhook.id}/enable`, { method: 'POST' });
      expect(enabled.status, JSON.stringify(enabled.body)).to.equal(200);
      expect(enabled.body).to.include({ status: 'active', replayed: 0 });
      const next = await t.observe('after enabling');
      const [, , third] = await hooks.waitFor(3);
      expect(third!.body.data.observationId).to.equal(next.id);
      await sleep(1200);
      expect(hooks.received).to.have.length(3);
    });
  });

  describe('deliveries pending when a subscription is disabled', () => {
    it('are cancelled, and delivered after enabling with replayMissed, with the one whose retries ran out', async function () {
      this.timeout(20_000);
      // One attempt at a time per subscription: B's first attempt waits behind A's last, which hangs.
      const hooks = await receiver((n) => (n === 1 ? 500 : n === 2 ? 'hang' : 204));
      const t = await setup({ WEBHOOK_RETRY_SCHEDULE: '100ms', WEBHOOK_CONCURRENCY_PER_SUBSCRIPTION: '1' });
      const webhook = await t.subscribe(hooks.url);
      const a = await t.observe('A');
      await hooks.waitFor(2);
      const b = await t.observe('B, while A is on its last attempt');
      await eventually(async () =>
        (await t.subscription(webhook.id)).status === 'disabled' ? true : undefined,
      );
      const bDelivery = deliveryIdFor(webhook.id, `evt_${(await t.recorded(b.id)).id}`);
      const bStream = streamName('delivery', t.tenantId, bDelivery);
      await eventually(async () =>
        (await typesIn(t.server, bStream)).includes('DeliveryCancelled') ? true : undefined,
      );
      await sleep(300);
      expect(hooks.received).to.have.length(2);

      const enabled = await t.api(`/webhooks/${webhook.id}/enable`, {
        method: 'POST',
        body: { replayMissed: true },
      });
      expect(enabled.status, JSON.stringify(enabled.body)).to.equal(200);
      // B, cancelled by the disable, resumes; A, whose retries ran out, is sent once more.
      expect(enabled.body.replayed).to.equal(2);
      await hooks.waitFor(4);
      await sleep(1200);
      const received = hooks.received.map((r) => r.body.data.observationId);
      expect(received.slice(0, 2)).to.deep.equal([a.id, a.id]);
      expect(received.slice(2).sort()).to.deep.equal([a.id, b.id].sort());
    });
  });

  describe('redelivery and the attempt log', () => {
    it('redelivers one delivery on request, with the same envelope id and body, logged as a further attempt', async () => {
      const hooks = await receiver();
      const t = await setup();
      const webhook = await t.subscribe(hooks.url);
      await t.observe();
      const [first] = await hooks.waitFor(1);
      const [logged] = await t.attempts(webhook.id, 1);

      const redeliver = await t.api(`/webhooks/${webhook.id}/deliveries/${logged!.deliveryId}/redeliver`, {
        method: 'POST',
      });
      expect(redeliver.status, JSON.stringify(redeliver.body)).to.equal(202);
      expect(redeliver.body).to.include({ deliveryId: logged!.deliveryId, webhookId: webhook.id });
      const [, second] = await hooks.waitFor(2);
      expect(second!.headers['webhook-id']).to.equal(first!.headers['webhook-id']);
      expect(second!.body.id).to.equal(first!.body.id);
      expect(second!.rawBody).to.equal(first!.rawBody);
      expect(second!.verified).to.equal(true);
      const log = await t.attempts(webhook.id, 2);
      expect(log.map((a) => a.attempt)).to.deep.equal([2, 1]);
      expect(log[0]).to.deep.include({ status: 'succeeded', statusCode: 204, eventId: first!.body.id });
      await sleep(1200);
      expect(hooks.received).to.have.length(2);
    });

    it('brings a pending retry forward without ending the retry schedule', async () => {
      const hooks = await receiver(() => 500);
      const t = await setup({ WEBHOOK_RETRY_SCHEDULE: '10m,10m' });
      const webhook = await t.subscribe(hooks.url);
      await t.observe();
      const [first] = await t.attempts(webhook.id, 1);
      const response = await t.api(`/webhooks/${webhook.id}/deliveries/${first!.deliveryId}/redeliver`, {
        method: 'POST',
      });
      expect(response.status, JSON.stringify(response.body)).to.equal(202);
      const [second] = await t.attempts(webhook.id, 2);
      expect(second).to.deep.include({ attempt: 2, status: 'failed', statusCode: 500 });
      expect(second!.nextAttemptAt, 'the third attempt is still to come').to.be.a('string');
      expect((await t.subscription(webhook.id)).status).to.equal('active');
    });

    it('answers redelivery to a deleted subscription with 404, and sends nothing', async () => {
      const hooks = await receiver();
      const t = await setup();
      const webhook = await t.subscribe(hooks.url);
      await t.observe();
      const [logged] = await t.attempts(webhook.id, 1);
      expect((await t.api(`/webhooks/${webhook.id}`, { method: 'DELETE' })).status).to.equal(204);
      const response = await t.api(`/webhooks/${webhook.id}/deliveries/${logged!.deliveryId}/redeliver`, {
        method: 'POST',
      });
      expect(response.status).to.equal(404);
      await sleep(300);
      expect(hooks.received).to.have.length(1);
    });

    it('answers redelivery of a delivery under another subscription with 404', async () => {
      const hooks = await receiver();
      const t = await setup();
      const webhook = await t.subscribe(hooks.url);
      const other = await t.subscribe(hooks.url);
      await t.observe();
      const [logged] = await t.attempts(webhook.id, 1);
      const response = await t.api(`/webhooks/${other.id}/deliveries/${logged!.deliveryId}/redeliver`, {
        method: 'POST',
      });
      expect(response.status).to.equal(404);
    });

    it('filters the log by status and event type, and pages it with nextCursor', async () => {
      // Creations succeed, updates fail (and retry only in ten minutes).
      const hooks = await receiver((_n, req) => (req.body?.type === 'observation.created' ? 204 : 500));
      const t = await setup({ WEBHOOK_RETRY_SCHEDULE: '10m' });
      const webhook = await t.subscribe(hooks.url, ['observation.created', 'observation.updated']);
      const first = await t.observe('one');
      await t.observe('two');
      await t.observe('three');
      await t.update(first.id, 'one, changed');
      await t.attempts(webhook.id, 4);

      const succeeded = await t.api(`/webhooks/${webhook.id}/deliveries?status=succeeded`);
      expect(succeeded.body.data).to.have.length(3);
      expect(succeeded.body.data.every((a: Attempt) => a.eventType === 'observation.created')).to.equal(true);
      const failed = await t.api(`/webhooks/${webhook.id}/deliveries?status=failed`);
      expect(failed.body.data).to.have.length(1);
      expect(failed.body.data[0]).to.deep.include({
        eventType: 'observation.updated',
        statusCode: 500,
        error: 'HTTP 500',
      });
      expect(failed.body.data[0].nextAttemptAt).to.be.a('string');
      const updates = await t.api(`/webhooks/${webhook.id}/deliveries?eventType=observation.updated`);
      expect(updates.body.data.map((a: Attempt) => a.status)).to.deep.equal(['failed']);
      const none = await t.api(
        `/webhooks/${webhook.id}/deliveries?eventType=observation.updated&status=succeeded`,
      );
      expect(none.body.data).to.deep.equal([]);

      const page1 = await t.api(`/webhooks/${webhook.id}/deliveries?limit=3`);
      expect(page1.body.data).to.have.length(3);
      expect(page1.body.nextCursor).to.be.a('string');
      const page2 = await t.api(
        `/webhooks/${webhook.id}/deliveries?limit=3&cursor=${encodeURIComponent(page1.body.nextCursor)}`,
      );
      expect(page2.body.data).to.have.length(1);
      expect(page2.body.nextCursor).to.equal(null);
      const all = [...page1.body.data, ...page2.body.data] as Attempt[];
      expect(new Set(all.map((a) => a.id)).size).to.equal(4);
      const times = all.map((a) => a.attemptedAt);
      expect(times).to.deep.equal([...times].sort().reverse());
      // A cursor is bound to its query: reusing it under another filter is refused.
      const crossed = await t.api(
        `/webhooks/${webhook.id}/deliveries?status=failed&cursor=${encodeURIComponent(page1.body.nextCursor)}`,
      );
      expect(crossed.status).to.equal(400);
    });
  });

  describe('at-least-once, exactly one delivery', () => {
    it('schedules nothing for a domain event it has already handled', async () => {
      const hooks = await receiver();
      const t = await setup();
      const webhook = await t.subscribe(hooks.url);
      const observation = await t.observe();
      await hooks.waitFor(1);
      const event = await t.recorded(observation.id);
      const [external] = toExternal(event);

      // A second worker over the same stores, as another instance would be: it is never started.
      const { dir, remove } = tempDir();
      cleanups.push(remove);
      const sender = webhookSender({ timeoutMs: 500, allowPrivateNetworks: true, allowLoopback: false });
      cleanups.push(() => sender.close());
      const other = webhookWorker({
        eventStore: t.server.stores.eventStore,
        readModels: t.server.stores.readModels,
        sender,
        mailer: outboxMailer(dir, 'test@localhost', pino({ level: 'silent' })),
        secretKey: 'unused',
        clock: () => new Date(),
        logger: pino({ level: 'silent' }),
        deliveriesCollection: deliveriesProjection.collection.name,
        settings: {
          retryDelaysMs: [1000],
          timeoutMs: 500,
          claimTimeoutMs: 10_500,
          concurrency: 4,
          perSubscription: 1,
        },
      });
      expect(await other.schedule(t.tenantId, webhook.id, external!, event.id)).to.equal(null);
      expect(await other.schedule(t.tenantId, webhook.id, external!, event.id)).to.equal(null);
      const deliveryStream = streamName('delivery', t.tenantId, deliveryIdFor(webhook.id, external!.id));
      expect(
        (await typesIn(t.server, deliveryStream)).filter((type) => type === 'DeliveryScheduled'),
      ).to.have.length(1);
      await sleep(1200);
      expect(hooks.received).to.have.length(1);
    });

    it('does not deliver again when the projector sees the same domain events again after a restart', async function () {
      this.timeout(20_000);
      const hooks = await receiver();
      const { dir, remove } = tempDir();
      cleanups.push(remove);
      const first = await setup({}, { dataDir: dir });
      await first.subscribe(hooks.url);
      await first.observe('one');
      await first.observe('two');
      await hooks.waitFor(2);
      await first.stop();

      // As if the projector had crashed before recording its progress: every event comes again.
      const db = new Database(join(dir, 'events.db'));
      const moved = db
        .prepare("UPDATE subscription_groups SET checkpoint = 0 WHERE name = 'webhook-projector'")
        .run();
      db.close();
      expect(moved.changes).to.equal(1);

      const second = await startTestServer(fastEnv, { dataDir: dir });
      cleanups.push(() => second.close());
      const again = asTenant(second, first.tenantId, first.apiKey);
      const third = await again.observe('three');
      const requests = await hooks.waitFor(3);
      await sleep(1200);
      expect(requests).to.have.length(3);
      expect(requests[2]!.body.data.observationId).to.equal(third.id);
      expect(new Set(requests.map((r) => r.body.id)).size).to.equal(3);
    });

    it('makes a retry that fell due while the service was stopped once it runs again', async function () {
      this.timeout(20_000);
      let answers = 0;
      const hooks = await receiver(() => (++answers === 1 ? 500 : 204));
      const { dir, remove } = tempDir();
      cleanups.push(remove);
      const env = { WEBHOOK_RETRY_SCHEDULE: '2s' };
      const first = await setup(env, { dataDir: dir });
      const webhook = await first.subscribe(hooks.url);
      await first.observe();
      const [failed] = await first.attempts(webhook.id, 1);
      expect(failed).to.deep.include({ status: 'failed', statusCode: 500 });
      const due = Date.parse(failed!.nextAttemptAt!);
      await first.stop();
      expect(Date.now(), 'stopped before the retry was due').to.be.below(due);

      // The service starts again when, by its clock, the retry is 300 ms overdue: no real wait for it.
      const clock = testClock();
      clock.advance(due - Date.now() + 300);
      expect(hooks.received, 'nothing while stopped').to.have.length(1);
      const second = await startTestServer({ ...fastEnv, ...env }, { dataDir: dir, options: { clock } });
      cleanups.push(() => second.close());
      const [, retried] = await hooks.waitFor(2);
      expect(retried!.headers['webhook-id']).to.equal(hooks.received[0]!.headers['webhook-id']);
      expect(retried!.verified).to.equal(true);
      const again = asTenant(second, first.tenantId, first.apiKey);
      const log = await again.attempts(webhook.id, 2);
      expect(log[0]).to.deep.include({ attempt: 2, status: 'succeeded', statusCode: 204 });
      expect(Date.parse(log[0]!.attemptedAt), 'attempted once due').to.be.at.least(due);
      await sleep(1200);
      expect(hooks.received).to.have.length(2);
    });
  });
});
