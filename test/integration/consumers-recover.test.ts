import { expect } from 'chai';
import { diskFullOn } from '../support/faults.js';
import { startReceiver, type Receiver } from '../support/receiver.js';
import { request, startTestServer, withTenant, type TestServer } from '../support/server.js';
import { tempDir } from '../support/adapters.js';
import { eventually } from '../support/wait.js';

const secret = 'whsec-test-0123456789abcdef';
const webhookEnv = { WEBHOOK_ALLOW_HTTP: 'true', WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true', RATE_LIMIT: 'off' };

interface Attempt {
  deliveryId: string;
  attempt: number;
  attemptedAt: string;
  nextAttemptAt: string | null;
}

describe('consumers that must run for months', () => {
  let cleanups: (() => Promise<unknown>)[] = [];
  afterEach(async () => {
    for (const cleanup of cleanups.reverse()) await cleanup();
    cleanups = [];
  });

  const serve = async (...args: Parameters<typeof startTestServer>) => {
    const server = await startTestServer(...args);
    cleanups.push(() => server.close());
    return server;
  };
  const receive = async (answer?: Parameters<typeof startReceiver>[1]) => {
    const receiver = await startReceiver(secret, answer);
    cleanups.push(() => receiver.close());
    return receiver;
  };

  /** A tenant subscribed to observation.created at the receiver; `observe` records one observation. */
  const subscribed = async (server: TestServer, receiver: Receiver) => {
    const { tenantId, adminKey } = await withTenant(server);
    const apiAt =
      (url: string) =>
      (path: string, init: Parameters<typeof request>[1] = {}) =>
        request(`${url}/v1/tenants/${tenantId}${path}`, {
          ...init,
          headers: { 'X-API-Key': adminKey, ...init.headers },
        });
    const api = apiAt(server.url);
    const webhook = await api('/webhooks', {
      method: 'POST',
      body: { url: receiver.url, events: ['observation.created'], secret },
    });
    expect(webhook.status, JSON.stringify(webhook.body)).to.equal(201);
    const observe = async (notes: string) => {
      const created = await api('/observations', {
        method: 'POST',
        body: { observedAt: '2026-05-01T09:30:00Z', notes },
      });
      expect(created.status, JSON.stringify(created.body)).to.equal(201);
      return created.body as { id: string };
    };
    return { tenantId, api, apiAt, observe, webhookId: webhook.body.id as string };
  };

  describe('when the disk is full under the webhook projector', () => {
    it('restarts it with back-off once space is back, and every event still gets its webhook', async () => {
      // Only the projector's own writes (scheduling deliveries) fail, as SQLite fails them on a full disk.
      const { fault, wrap } = diskFullOn('delivery-');
      const server = await serve(webhookEnv, { options: { wrapEventStore: wrap } });
      const receiver = await receive();
      const tenant = await subscribed(server, receiver);

      fault.full = true;
      const created = [];
      for (let n = 0; n < 20; n += 1) created.push(await tenant.observe(`fox ${n}`));
      await eventually(
        () => Promise.resolve(fault.refused > 0 || undefined),
        5000,
        'the projector to meet the full disk',
      );
      await eventually(
        () =>
          Promise.resolve(
            server.service.consumers().find((consumer) => consumer.name === 'webhook-projector')?.state ===
              'retrying' || undefined,
          ),
        5000,
        'the projector to be reported as retrying',
      );
      // Still full through two restarts: each one meets the full disk again and backs off further.
      await eventually(
        () =>
          Promise.resolve(
            (server.service.consumers().find((consumer) => consumer.name === 'webhook-projector')?.restarts ??
              0) >= 2 || undefined,
          ),
        10_000,
        'the projector to restart twice while the disk is full',
      );
      fault.full = false;

      const received = await receiver.waitFor(20, 20_000);
      const delivered = new Set(
        received.map((hit) => (hit.body as { data: { observationId: string } }).data.observationId),
      );
      expect([...delivered].sort()).to.deep.equal(created.map((observation) => observation.id).sort());
      const projector = server.service.consumers().find((consumer) => consumer.name === 'webhook-projector');
      expect(projector?.state).to.equal('running');
      expect(projector?.restarts).to.be.greaterThan(0);
      expect(projector?.lastError).to.match(/disk is full/);
    });
  });

  describe('retries', () => {
    /** How late each retry came after the due time its failed attempt recorded, in ms. */
    const lateness = async (
      tenant: Awaited<ReturnType<typeof subscribed>>,
      receiver: Receiver,
      count: number,
    ) => {
      const attempts = await eventually(
        async () => {
          const response = await tenant.api(`/webhooks/${tenant.webhookId}/deliveries?limit=50`);
          const data = response.body.data as Attempt[];
          return data.length >= count ? data : undefined;
        },
        15_000,
        `${count} attempts in the log`,
      );
      const due = attempts
        .map((attempt) => attempt.nextAttemptAt)
        .filter((at): at is string => at !== null)
        .map(Date.parse)
        .sort((a, b) => a - b);
      const arrived = receiver.received.map((hit) => hit.at).sort((a, b) => a - b);
      return due.map((dueAt, index) => arrived[index + 1]! - dueAt);
    };

    it('attempts each retry within 250 ms of its due time', async () => {
      const server = await serve({ ...webhookEnv, WEBHOOK_RETRY_SCHEDULE: '1200ms,1300ms,1100ms' });
      const receiver = await receive((n) => (n <= 3 ? 500 : 204));
      const tenant = await subscribed(server, receiver);
      await tenant.observe('a fox');
      await receiver.waitFor(4, 15_000);
      const late = await lateness(tenant, receiver, 4);
      expect(late).to.have.length(3);
      for (const ms of late) expect(ms).to.be.within(0, 250);
    });

    it('keeps a retry punctual across a restart of the service', async () => {
      const { dir, remove } = tempDir();
      cleanups.push(() => Promise.resolve(remove()));
      const env = { ...webhookEnv, WEBHOOK_RETRY_SCHEDULE: '2500ms' };
      const server = await startTestServer(env, { dataDir: dir });
      const receiver = await receive((n) => (n === 1 ? 500 : 204));
      const tenant = await subscribed(server, receiver);
      await tenant.observe('a fox');
      await receiver.waitFor(1, 10_000);
      // The failed attempt is recorded, then the service stops before the retry is due and starts again.
      await eventually(
        async () =>
          ((await tenant.api(`/webhooks/${tenant.webhookId}/deliveries`)).body.data as Attempt[]).length >
            0 || undefined,
        5000,
        'the failed attempt in the log',
      );
      await server.close();
      const restarted = await serve(env, { dataDir: dir });
      await receiver.waitFor(2, 10_000);
      const [late] = await lateness({ ...tenant, api: tenant.apiAt(restarted.url) }, receiver, 2);
      expect(late).to.be.within(0, 250);
    });
  });
});
