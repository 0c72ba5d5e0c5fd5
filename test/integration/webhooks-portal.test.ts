import { expect } from 'chai';
import { randomBytes } from 'node:crypto';
import { Webhook as StandardWebhook } from 'standardwebhooks';
import { startReceiver, type Answer, type Receiver } from '../support/receiver.js';
import { request, startTestServer, withTenant, type TestServer } from '../support/server.js';
import { createTestDatabase, describePostgres } from '../support/postgres.js';
import { eventually, sleep } from '../support/wait.js';

/**
 * What the console's webhook pages stand on (docs/webhooks.md): pause and resume, a subscription's health,
 * an attempt's request as sent, and the replay of what failed, over real HTTP to real receivers.
 */
const suite = (storeEnv: () => Record<string, string>) =>
  function (this: Mocha.Suite) {
    this.timeout(60_000);

    const secret = `whsec_${randomBytes(32).toString('base64')}`;
    let server: TestServer;
    let tenantId: string;
    let adminKey: string;
    let receivers: Receiver[] = [];

    beforeEach(async () => {
      server = await startTestServer({
        WEBHOOK_ALLOW_HTTP: 'true',
        WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true',
        WEBHOOK_RETRY_SCHEDULE: '1s,1s',
        WEBHOOK_TIMEOUT: '2s',
        ...storeEnv(),
      });
      ({ tenantId, adminKey } = await withTenant(server));
    });
    afterEach(async () => {
      for (const receiver of receivers) await receiver.close();
      receivers = [];
      await server.close();
    });

    const receiver = async (answer?: (n: number) => Answer) => {
      const started = await startReceiver(secret, answer);
      receivers.push(started);
      return started;
    };
    const api = (path: string, init: Parameters<typeof request>[1] = {}) =>
      request(`${server.url}/v1/tenants/${tenantId}${path}`, {
        ...init,
        headers: { 'X-API-Key': adminKey, ...init.headers },
      });
    const subscribe = async (url: string) => {
      const created = await api('/webhooks', {
        method: 'POST',
        body: { url, events: ['observation.created'], secret },
      });
      expect(created.status, JSON.stringify(created.body)).to.equal(201);
      return created.body.id as string;
    };
    const observe = async (notes: string) => {
      const created = await api('/observations', {
        method: 'POST',
        body: { observedAt: '2026-05-01T09:30:00Z', notes },
      });
      expect(created.status, JSON.stringify(created.body)).to.equal(201);
      return created.body.id as string;
    };
    const notesOf = (receiver: Receiver) =>
      receiver.received.map((received) => (received.body as { data: { notes: string } }).data.notes);

    describe("a tenant's subscriptions changed by several requests at once", () => {
      it('takes every change, none refused as a race lost: they share one stream, and none sent If-Match', async () => {
        const hooks = await receiver();
        const ids = await Promise.all(Array.from({ length: 8 }, () => subscribe(hooks.url)));
        expect(new Set(ids).size).to.equal(8);
        const paused = await Promise.all(ids.map((id) => api(`/webhooks/${id}/pause`, { method: 'POST' })));
        expect(paused.map((answer) => answer.status)).to.deep.equal(ids.map(() => 200));
        // Each read from its stream: the list is a projection, which may not have caught up yet.
        const shown = await Promise.all(ids.map((id) => api(`/webhooks/${id}`)));
        expect(shown.map((answer) => answer.body.status)).to.deep.equal(ids.map(() => 'paused'));
      });
    });

    describe('pause and resume', () => {
      it('sends nothing while paused, then everything held back on resume', async () => {
        const hooks = await receiver();
        const id = await subscribe(hooks.url);
        await observe('before');
        await hooks.waitFor(1);

        const paused = await api(`/webhooks/${id}/pause`, { method: 'POST' });
        expect(paused.status, JSON.stringify(paused.body)).to.equal(200);
        expect(paused.body).to.include({ status: 'paused' });
        expect(paused.body.pausedAt).to.be.a('string');
        expect((await api(`/webhooks/${id}`)).body.status).to.equal('paused');
        for (const notes of ['one', 'two', 'three']) await observe(notes);
        // The sweep runs each second: two turns to send what it must not.
        await sleep(2500);
        expect(notesOf(hooks)).to.deep.equal(['before']);

        const resumed = await api(`/webhooks/${id}/resume`, { method: 'POST' });
        expect(resumed.status, JSON.stringify(resumed.body)).to.equal(200);
        expect(resumed.body).to.include({ status: 'active', replayed: 3, pausedAt: null });
        await hooks.waitFor(4);
        // Scheduled in the order they happened, but with 4 attempts in flight per subscription neighbours
        // may swap places (docs/webhooks.md), so only what arrived is compared, not its order.
        const [first, ...heldBack] = notesOf(hooks);
        expect(first).to.equal('before');
        expect(heldBack.sort()).to.deep.equal(['one', 'three', 'two']);
        expect(hooks.received.every((received) => received.verified)).to.equal(true);
      });

      it('holds back a retry that falls due during the pause, and sends it on resume', async () => {
        let failing = true;
        const hooks = await receiver(() => (failing ? 500 : 204));
        const id = await subscribe(hooks.url);
        await observe('retried');
        await hooks.waitFor(1);
        await api(`/webhooks/${id}/pause`, { method: 'POST' });
        failing = false;
        await sleep(2500);
        const before = hooks.received.length;
        const resumed = await api(`/webhooks/${id}/resume`, { method: 'POST' });
        expect(resumed.body.replayed).to.equal(1);
        await hooks.waitFor(before + 1);
        expect(hooks.received.at(-1)!.status).to.equal(204);
      });

      it('answers a resume of an active subscription with 200 and nothing replayed, and a pause of a deleted one with 404', async () => {
        const id = await subscribe((await receiver()).url);
        const resumed = await api(`/webhooks/${id}/resume`, { method: 'POST' });
        expect(resumed.status).to.equal(200);
        expect(resumed.body).to.include({ status: 'active', replayed: 0 });
        await api(`/webhooks/${id}/pause`, { method: 'POST' });
        const again = await api(`/webhooks/${id}/pause`, { method: 'POST' });
        expect(again.status).to.equal(200);
        const enabled = await api(`/webhooks/${id}/enable`, { method: 'POST' });
        expect(enabled.status).to.equal(409);
        expect(enabled.headers.get('content-type')).to.match(/^application\/problem\+json/);
        expect((await api(`/webhooks/${id}`, { method: 'DELETE' })).status).to.equal(204);
        const gone = await api(`/webhooks/${id}/pause`, { method: 'POST' });
        expect(gone.status).to.equal(404);
        expect(gone.headers.get('content-type')).to.match(/^application\/problem\+json/);
      });
    });

    it('shows the health of a subscription whose receiver answers 500: its rate, last attempt and the failing flag', async () => {
      const hooks = await receiver(() => ({ status: 500, body: 'database down' }));
      const id = await subscribe(hooks.url);
      const fresh = (await api(`/webhooks/${id}`)).body.health;
      expect(fresh).to.include({ attempts: 0, successRate: null, failing: false, window: 100 });
      for (let n = 0; n < 3; n += 1) await api(`/webhooks/${id}/test`, { method: 'POST' });
      const health = await eventually(async () => {
        const read = (await api(`/webhooks/${id}`)).body.health;
        return read.attempts === 3 ? read : undefined;
      });
      expect(health).to.include({
        successRate: 0,
        lastAttemptStatus: 'failed',
        lastStatusCode: 500,
        lastSuccessAt: null,
        consecutiveFailures: 3,
        failing: true,
      });
      const listed = (await api('/webhooks')).body.data as { id: string; health: { failing: boolean } }[];
      expect(listed.find((subscription) => subscription.id === id)?.health.failing).to.equal(true);
    });

    it('shows an attempt with the request as sent: headers whose signatures verify, and never the secret', async () => {
      const hooks = await receiver(() => ({ status: 500, body: 'not today' }));
      const id = await subscribe(hooks.url);
      const tested = await api(`/webhooks/${id}/test`, { method: 'POST' });
      expect(tested.body.ok).to.equal(false);
      const details = await api(`/webhooks/${id}/deliveries/${tested.body.deliveryId as string}`);
      expect(details.status, JSON.stringify(details.body)).to.equal(200);
      expect(details.body).to.include({ test: true, status: 'failed', eventType: 'observation.created' });
      const [attempt] = details.body.attemptLog as {
        request: { url: string; headers: Record<string, string> };
        statusCode: number;
        responseBody: string;
        durationMs: number;
        error: string;
      }[];
      expect(attempt).to.include({ statusCode: 500, responseBody: 'not today', error: 'HTTP 500' });
      expect(attempt!.durationMs).to.be.a('number');
      expect(attempt!.request.url).to.equal(hooks.url);
      // The body sent is the payload in canonical JSON: the receiver's bytes, which the headers sign.
      expect(JSON.parse(hooks.received[0]!.rawBody)).to.deep.equal(details.body.payload);
      const { headers } = attempt!.request;
      expect(headers['webhook-id']).to.equal(details.body.payload.id);
      expect(() => new StandardWebhook(secret).verify(hooks.received[0]!.rawBody, headers)).not.to.throw();
      const text = JSON.stringify(details.body);
      expect(text).not.to.include(secret).and.not.include(secret.slice('whsec_'.length));

      const other = await subscribe((await receiver()).url);
      const foreign = await api(`/webhooks/${other}/deliveries/${tested.body.deliveryId as string}`);
      expect(foreign.status).to.equal(404);
      expect(foreign.headers.get('content-type')).to.match(/^application\/problem\+json/);
    });

    it('marks test attempts in the log, and filters on them', async () => {
      const hooks = await receiver();
      const id = await subscribe(hooks.url);
      await observe('real');
      await api(`/webhooks/${id}/test`, { method: 'POST' });
      const all = await eventually(async () => {
        const data = (await api(`/webhooks/${id}/deliveries`)).body.data as { test: boolean }[];
        return data.length === 2 ? data : undefined;
      });
      expect(all.map((attempt) => attempt.test).sort()).to.deep.equal([false, true]);
      const tests = (await api(`/webhooks/${id}/deliveries?test=true`)).body.data as { test: boolean }[];
      expect(tests.map((attempt) => attempt.test)).to.deep.equal([true]);
      const real = (await api(`/webhooks/${id}/deliveries?test=false`)).body.data as { test: boolean }[];
      expect(real.map((attempt) => attempt.test)).to.deep.equal([false]);
    });

    it('sends again what ended failed since a time, as redeliveries, and says how many', async () => {
      let failing = true;
      const hooks = await receiver(() => (failing ? 500 : 204));
      const id = await subscribe(hooks.url);
      const since = new Date().toISOString();
      await observe('lost');
      // One attempt and two retries, a second apart: then the delivery has failed, and the subscription is
      // disabled; enabling it without replayMissed leaves the delivery failed.
      await eventually(async () =>
        (await api(`/webhooks/${id}`)).body.status === 'disabled' ? true : undefined,
      );
      // The worker that disabled it records the owner's notification on the same stream right after: an
      // enable that read the stream before that append loses the race with 409, and is sent again.
      await eventually(async () => {
        const enabled = await api(`/webhooks/${id}/enable`, { method: 'POST' });
        expect(enabled.status, JSON.stringify(enabled.body)).to.be.oneOf([200, 409]);
        return enabled.status === 200 ? true : undefined;
      });
      const sent = hooks.received.length;
      failing = false;
      const replayed = await api(`/webhooks/${id}/replay`, { method: 'POST', body: { since } });
      expect(replayed.status, JSON.stringify(replayed.body)).to.equal(202);
      expect(replayed.body).to.deep.equal({ replayed: 1, more: false });
      await hooks.waitFor(sent + 1);
      expect(notesOf(hooks).at(-1)).to.equal('lost');
      const later = await api(`/webhooks/${id}/replay`, {
        method: 'POST',
        body: { since: new Date(Date.now() + 60_000).toISOString() },
      });
      expect(later.body).to.deep.equal({ replayed: 0, more: false });
      const bad = await api(`/webhooks/${id}/replay`, { method: 'POST', body: { since: 'yesterday' } });
      expect(bad.status).to.equal(400);
    });
  };

describe(
  'webhook subscriptions as an app portal shows them, on SQLite',
  suite(() => ({})),
);
// Each test starts a service of its own, whose generated secrets its database records: a database each.
describePostgres('webhook subscriptions as an app portal shows them, on PostgreSQL', () => {
  describe(
    'the same API',
    suite(() => ({ DATABASE_URL: createTestDatabase() })),
  );
});
