import { expect } from 'chai';
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
import { deliverer } from '../../src/webhooks/deliverer.js';
import { deliveryDecider, deliveryIdFor } from '../../src/webhooks/delivery.decider.js';
import type { ExternalEvent } from '../../src/webhooks/external.js';
import { webhookSender } from '../../src/webhooks/sender.js';
import { subscriptionsView } from '../../src/webhooks/subscription.decider.js';
import { testClock } from '../support/clock.js';
import { captureLogs } from '../support/logs.js';
import { holdingReceiver } from '../support/receiver.js';
import { request, startTestServer, withTenant, type TestServer } from '../support/server.js';
import { describePostgres, suiteDatabase } from '../support/postgres.js';
import { eventually } from '../support/wait.js';

/**
 * Issue 23, finding 2: instance A's attempt outlives its claim, instance B takes the delivery over, and A's
 * late outcome must not land on B's claim. Two real deliverers, on the stores of a real service (ROLE=api,
 * so that its own worker stays out of the way), against a real receiver on loopback. The claim time-out
 * passes on a test clock both deliverers read; the receiver holds each request until the test answers it,
 * so the order of events is set by the test, not by timing.
 */
/**
 * The store the two instances share. In process, on PostgreSQL, it is opened here rather than taken from
 * the service: the service loads its PostgreSQL adapter by a dynamic import, which under mocha's loader
 * makes a second copy of src/core/errors.ts, and the deliverers' `instanceof VersionConflictError` would
 * not know its errors (a real process loads one copy).
 */
type SharedStore = (server: TestServer) => Promise<{ eventStore: EventStore; close: () => Promise<void> }>;

const servicesStore: SharedStore = (server) =>
  Promise.resolve({ eventStore: server.stores.eventStore, close: () => Promise.resolve() });

const takeOver = (env: () => Record<string, string>, sharedStore: SharedStore) => {
  let server: TestServer;
  let receiver: Awaited<ReturnType<typeof holdingReceiver>>;
  const cleanups: (() => Promise<unknown> | void)[] = [];
  beforeEach(async () => {
    server = await startTestServer({ ROLE: 'api', ...env() });
    receiver = await holdingReceiver();
  });
  afterEach(async () => {
    for (const cleanup of cleanups.reverse()) await cleanup();
    cleanups.length = 0;
    await receiver.close();
    await server.close();
  });

  it("refuses A's late failure, on what was its last retry, and keeps B's success: delivered once, subscription active", async () => {
    const { tenantId, adminKey } = await withTenant(server);
    const created = await request(`${server.url}/v1/tenants/${tenantId}/webhooks`, {
      method: 'POST',
      body: { url: receiver.url, events: ['observation.created'] },
      headers: { 'X-API-Key': adminKey },
    });
    expect(created.status, JSON.stringify(created.body)).to.equal(201);
    const webhookId = created.body.id as string;

    const { readModels } = server.stores;
    const shared = await sharedStore(server);
    cleanups.push(() => shared.close());
    const { eventStore } = shared;
    const clock = testClock();
    const claimTimeoutMs = 30_000;
    const instance = (name: string) => {
      const logs = captureLogs('warn');
      // The real time-out is long enough that neither request times out while the receiver holds it.
      const sender = webhookSender({ timeoutMs: 20_000, allowPrivateNetworks: false, allowLoopback: true });
      const running = deliverer({
        eventStore,
        readModels,
        sender,
        secretKey: developmentSecret(server.dataDir, 'webhookSecretKey'),
        clock,
        logger: logs.logger.child({ instance: name }),
        // No retries: a failure recorded on this attempt would disable the subscription.
        settings: {
          retryDelaysMs: [],
          timeoutMs: 20_000,
          claimTimeoutMs,
          concurrency: 4,
          perSubscription: 4,
        },
        deliveriesCollection: deliveriesProjection.collection.name,
        subscriptions: cachedViews(eventStore, subscriptionsView),
      });
      cleanups.push(() => sender.close());
      cleanups.push(() => running.stop({}, () => Promise.resolve()));
      return { ...running, logs };
    };
    const a = instance('a');
    const b = instance('b');

    const payload: ExternalEvent = {
      id: 'evt_claims_1',
      type: 'observation.created',
      tenantId,
      timestamp: clock().toISOString(),
      data: { observationId: 'o_1' },
    };
    const deliveryId = deliveryIdFor(webhookId, payload.id);
    const stream = streamName('delivery', tenantId, deliveryId);
    await handleCommand(
      eventStore,
      deliveryDecider,
      stream,
      {
        type: 'Schedule',
        identity: { deliveryId, webhookId, eventId: payload.id, eventType: payload.type },
        payload,
        now: clock(),
      },
      systemContextOf('system:webhooks')(tenantId, clock(), null),
    );

    // A claims and sends; its receiver does not answer. Its claim times out; B takes over and sends too.
    a.kick(tenantId, deliveryId, webhookId);
    const first = await receiver.request(1);
    clock.advance(claimTimeoutMs + 1000);
    b.kick(tenantId, deliveryId, webhookId);
    const second = await receiver.request(2);

    // A's answer comes first, a failure: before the fence it was recorded on B's claim, used up the last
    // retry and disabled the subscription, and B's success was then refused.
    first.respond(500);
    const refused = await a.logs.waitFor('webhook outcome refused: claim taken over', 15_000);
    second.respond(204);
    const types = await eventually(
      async () => {
        const found = (await eventStore.readStream(stream)).map((event) => event.type);
        return found.includes('DeliverySucceeded') ? found : undefined;
      },
      15_000,
      "B's success in the delivery's stream",
    );

    expect(types).to.deep.equal([
      'DeliveryScheduled',
      'DeliveryAttemptClaimed',
      'DeliveryAttemptClaimed',
      'DeliveryAttempted',
      'DeliverySucceeded',
    ]);
    const events = await eventStore.readStream(stream);
    const [claimA, claimB] = events.filter((event) => event.type === 'DeliveryAttemptClaimed');
    const attempted = events.find((event) => event.type === 'DeliveryAttempted')!;
    expect(claimA!.data).to.include({ attempt: 1 });
    expect(claimB!.data).to.include({ attempt: 1 });
    expect(attempted.data).to.include({ attempt: 1, ok: true, statusCode: 204 });
    expect(refused).to.include({
      level: 40,
      deliveryId,
      subscriptionId: webhookId,
      claimId: (claimA!.data as { claimId: string }).claimId,
      currentClaimId: (claimB!.data as { claimId: string }).claimId,
      ok: false,
      status: 500,
    });
    expect(b.logs.lines.filter((line) => String(line.msg).includes('refused'))).to.deep.equal([]);

    // Nothing disabled the subscription.
    const disabled = await eventStore.readAll({ filter: { tenantId, eventTypes: ['WebhookDisabled'] } });
    expect(disabled.events).to.deep.equal([]);
    expect(receiver.held).to.have.length(2);
  });
};

describe('two instances delivering one webhook, when the first attempt outlives its claim', function () {
  this.timeout(60_000);

  describe('on the embedded stores', () => takeOver(() => ({}), servicesStore));

  describePostgres('on PostgreSQL', () => {
    const database = suiteDatabase();
    takeOver(
      () => ({ DATABASE_URL: database() }),
      async () => {
        const eventStore = withUpcasting(await openPostgresEventStore(database()), eventSchemas);
        return { eventStore, close: () => eventStore.close() };
      },
    );
  });
});
