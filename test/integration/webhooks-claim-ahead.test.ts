import { expect } from 'chai';
import { randomBytes } from 'node:crypto';
import { handleCommand } from '../../src/core/command-handler.js';
import { streamName } from '../../src/core/streams.js';
import { systemContextOf } from '../../src/core/system-context.js';
import { cachedViews } from '../../src/eventstore/cached-streams.js';
import type { EventStore } from '../../src/eventstore/port.js';
import { openPostgresEventStore } from '../../src/eventstore/postgres.js';
import { eventSchemas } from '../../src/domains.js';
import { withUpcasting } from '../../src/eventstore/upcasting.js';
import { developmentSecret } from '../../src/core/development-secrets.js';
import { deliveriesProjection } from '../../projections/webhooks.js';
import { aheadBudgetMs } from '../../src/webhooks/claim-ahead.js';
import { deliverer, type WebhookSettings } from '../../src/webhooks/deliverer.js';
import { deliveryDecider, deliveryIdFor } from '../../src/webhooks/delivery.decider.js';
import type { ExternalEvent } from '../../src/webhooks/external.js';
import { webhookSender } from '../../src/webhooks/sender.js';
import { subscriptionsView } from '../../src/webhooks/subscription.decider.js';
import { testClock, type TestClock } from '../support/clock.js';
import { captureLogs } from '../support/logs.js';
import { holdingReceiver, startReceiver } from '../support/receiver.js';
import { request, startTestServer, withTenant, type TestServer } from '../support/server.js';
import { createTestDatabase, describePostgres } from '../support/postgres.js';
import { eventually } from '../support/wait.js';

/**
 * Claiming ahead (src/webhooks/claim-ahead.ts): deliveries claimed in batches before their slots, on the
 * stores of a real service (ROLE=api, so that its own worker stays out of the way) and a real receiver on
 * loopback. Deliveries are scheduled straight into the store and set going with `kick`, as the projector
 * and the sweep do.
 */
type SharedStore = (server: TestServer) => Promise<{ eventStore: EventStore; close: () => Promise<void> }>;

const servicesStore: SharedStore = (server) =>
  Promise.resolve({ eventStore: server.stores.eventStore, close: () => Promise.resolve() });

const settings: WebhookSettings = {
  retryDelaysMs: [],
  timeoutMs: 20_000,
  claimTimeoutMs: 30_000,
  concurrency: 4,
  perSubscription: 4,
};

const claimAhead = (env: () => Record<string, string>, sharedStore: SharedStore) => {
  let server: TestServer;
  let eventStore: EventStore;
  let tenantId: string;
  let adminKey: string;
  const cleanups: (() => Promise<unknown> | void)[] = [];
  beforeEach(async () => {
    server = await startTestServer({ ROLE: 'api', ...env() });
    const shared = await sharedStore(server);
    cleanups.push(() => shared.close());
    eventStore = shared.eventStore;
    ({ tenantId, adminKey } = await withTenant(server));
  });
  afterEach(async () => {
    for (const cleanup of cleanups.reverse()) await cleanup();
    cleanups.length = 0;
    await server.close();
  });

  const subscribe = async (url: string, secret?: string) => {
    const created = await request(`${server.url}/v1/tenants/${tenantId}/webhooks`, {
      method: 'POST',
      body: { url, events: ['observation.created'], ...(secret ? { secret } : {}) },
      headers: { 'X-API-Key': adminKey },
    });
    expect(created.status, JSON.stringify(created.body)).to.equal(201);
    return created.body.id as string;
  };

  const instance = (name: string, clock: TestClock, overrides: Partial<WebhookSettings> = {}) => {
    const logs = captureLogs('warn');
    const sender = webhookSender({ timeoutMs: 20_000, allowPrivateNetworks: false, allowLoopback: true });
    const running = deliverer({
      eventStore,
      readModels: server.stores.readModels,
      sender,
      secretKey: developmentSecret(server.dataDir, 'webhookSecretKey'),
      clock,
      logger: logs.logger.child({ instance: name }),
      settings: { ...settings, ...overrides },
      deliveriesCollection: deliveriesProjection.collection.name,
      subscriptions: cachedViews(eventStore, subscriptionsView),
    });
    cleanups.push(() => sender.close());
    cleanups.push(() => running.stop({}, () => Promise.resolve()));
    return { ...running, logs };
  };

  /** Schedules `count` deliveries to the subscription, unclaimed; their ids, in order. */
  const schedule = async (webhookId: string, count: number, clock: TestClock): Promise<string[]> => {
    const ids: string[] = [];
    await Promise.all(
      Array.from({ length: count }, (_, index) => {
        const payload: ExternalEvent = {
          id: `evt_ahead_${index + 1}`,
          type: 'observation.created',
          tenantId,
          timestamp: clock().toISOString(),
          data: { observationId: `o_${index + 1}` },
        };
        const deliveryId = deliveryIdFor(webhookId, payload.id);
        ids.push(deliveryId);
        return handleCommand(
          eventStore,
          deliveryDecider,
          streamName('delivery', tenantId, deliveryId),
          {
            type: 'Schedule',
            identity: { deliveryId, webhookId, eventId: payload.id, eventType: payload.type },
            payload,
            now: clock(),
          },
          systemContextOf('system:webhooks')(tenantId, clock(), null),
        );
      }),
    );
    return ids;
  };

  const typesOf = async (deliveryId: string) =>
    (await eventStore.readStream(streamName('delivery', tenantId, deliveryId))).map((event) => event.type);

  const settled = (deliveryId: string) =>
    eventually(
      async () => {
        const types = await typesOf(deliveryId);
        return types.includes('DeliverySucceeded') ? types : undefined;
      },
      15_000,
      `the success of ${deliveryId}`,
    );

  it('delivers a backlog exactly once each when two instances kick every delivery', async () => {
    const clock = testClock();
    const secret = `whsec_${randomBytes(32).toString('base64')}`;
    const receiver = await startReceiver(secret);
    cleanups.push(() => receiver.close());
    const webhookId = await subscribe(receiver.url, secret);
    const ids = await schedule(webhookId, 120, clock);
    const a = instance('a', clock);
    const b = instance('b', clock);
    for (const deliveryId of ids) {
      a.kick(tenantId, deliveryId, webhookId);
      b.kick(tenantId, deliveryId, webhookId);
    }

    await receiver.waitFor(ids.length, 30_000);
    for (const deliveryId of ids) await settled(deliveryId);
    expect(receiver.received).to.have.length(ids.length);
    expect(new Set(receiver.received.map((got) => got.body.id as string)).size).to.equal(ids.length);
    expect(receiver.received.every((got) => got.verified)).to.equal(true);
    // Every delivery attempted once, on the one claim that won; a lost race appends nothing.
    for (const deliveryId of ids)
      expect(await typesOf(deliveryId)).to.deep.equal([
        'DeliveryScheduled',
        'DeliveryAttemptClaimed',
        'DeliveryAttempted',
        'DeliverySucceeded',
      ]);
  });

  it('releases a claim that waited past its budget for the slot, and attempts it on a new claim', async () => {
    const clock = testClock();
    const receiver = await holdingReceiver();
    cleanups.push(() => receiver.close());
    const webhookId = await subscribe(receiver.url);
    const [warmUp, first, second] = await schedule(webhookId, 3, clock);
    const a = instance('a', clock, { perSubscription: 1, concurrency: 1 });
    // Nothing is claimed ahead before an attempt of the subscription has ended: its receiver's pace is
    // unknown until then.
    a.kick(tenantId, warmUp!, webhookId);
    (await receiver.request(1)).respond(204);
    await settled(warmUp!);
    // The first holds the one slot; the second is claimed ahead of it.
    a.kick(tenantId, first!, webhookId);
    const held = await receiver.request(2);
    a.kick(tenantId, second!, webhookId);
    await eventually(
      async () => ((await typesOf(second!)).includes('DeliveryAttemptClaimed') ? true : undefined),
      15_000,
      'the second claimed ahead',
    );
    clock.advance(aheadBudgetMs(settings) + 1000);
    held.respond(204);

    // The POST is made on the second claim only.
    (await receiver.request(3)).respond(204);
    const types = await settled(second!);
    expect(types).to.deep.equal([
      'DeliveryScheduled',
      'DeliveryAttemptClaimed',
      'DeliveryAttemptInterrupted',
      'DeliveryAttemptClaimed',
      'DeliveryAttempted',
      'DeliverySucceeded',
    ]);
    expect(receiver.held).to.have.length(3);
    const events = await eventStore.readStream(streamName('delivery', tenantId, second!));
    const claims = events.filter((event) => event.type === 'DeliveryAttemptClaimed');
    const attempted = events.find((event) => event.type === 'DeliveryAttempted')!;
    expect(attempted.data).to.include({ attempt: 1, ok: true });
    expect(claims).to.have.length(2);
    await a.logs.waitFor('webhook claim waited too long for its slot; released unattempted', 5_000);
  });

  it('releases the deliveries claimed ahead when it stops, so that the next instance attempts them at once', async () => {
    const clock = testClock();
    const receiver = await holdingReceiver();
    cleanups.push(() => receiver.close());
    const webhookId = await subscribe(receiver.url);
    const [warmUp, first, second, third] = await schedule(webhookId, 4, clock);
    const a = instance('a', clock, { perSubscription: 1, concurrency: 1 });
    a.kick(tenantId, warmUp!, webhookId);
    (await receiver.request(1)).respond(204);
    await settled(warmUp!);
    for (const deliveryId of [first!, second!, third!]) a.kick(tenantId, deliveryId, webhookId);
    const held = await receiver.request(2);
    await eventually(
      async () => {
        const claimed = await Promise.all(
          [first!, second!, third!].map(async (id) => (await typesOf(id)).includes('DeliveryAttemptClaimed')),
        );
        return claimed.every(Boolean) ? true : undefined;
      },
      15_000,
      'the three claimed',
    );

    // The stop waits for the attempt in flight; the claims waiting for their slot are given back
    // unattempted, and what was not claimed yet stays as it was: all of it due at once.
    const stopped = a.stop({}, () => Promise.resolve());
    held.respond(204);
    await stopped;
    // Which of the three took the slot is the order their claims committed in.
    const deliveries = [first!, second!, third!];
    const types = await Promise.all(deliveries.map(typesOf));
    const attempted = types.filter((stream) => stream.includes('DeliverySucceeded'));
    const released = ['DeliveryScheduled', 'DeliveryAttemptClaimed', 'DeliveryAttemptInterrupted'];
    const rest = deliveries.filter((_, index) => !types[index]!.includes('DeliverySucceeded'));
    expect(attempted).to.have.length(1);
    expect(types.filter((stream) => stream.join() === released.join())).to.not.be.empty;
    for (const stream of types.filter((stream) => !stream.includes('DeliverySucceeded')))
      expect([released, ['DeliveryScheduled']]).to.deep.include(stream);
    expect(receiver.held).to.have.length(2);

    // Another instance (or the next start) claims them at once, without waiting for a claim time-out.
    const b = instance('b', clock);
    for (const deliveryId of rest) b.kick(tenantId, deliveryId, webhookId);
    (await receiver.request(3)).respond(204);
    (await receiver.request(4)).respond(204);
    for (const deliveryId of rest) await settled(deliveryId);
    expect(receiver.held).to.have.length(4);
  });
};

describe('claiming webhook deliveries ahead of their slots', function () {
  this.timeout(60_000);

  describe('on the embedded stores', () => claimAhead(() => ({}), servicesStore));

  describePostgres('on PostgreSQL', () => {
    // A database per test: each test's service has a DATA_DIR, and so secrets, of its own.
    let url: string;
    const database = () => url;
    beforeEach(() => {
      url = createTestDatabase();
    });
    claimAhead(
      () => ({ DATABASE_URL: database() }),
      async () => {
        const eventStore = withUpcasting(await openPostgresEventStore(database()), eventSchemas);
        return { eventStore, close: () => eventStore.close() };
      },
    );
  });
});
