import { expect } from 'chai';
import { randomBytes, randomUUID } from 'node:crypto';
import { join } from 'node:path';
import { deliveriesProjection } from '../../projections/webhooks.js';
import { handleCommand } from '../../src/core/command-handler.js';
import { streamName } from '../../src/core/streams.js';
import { systemContextOf } from '../../src/core/system-context.js';
import { platformPartition } from '../../src/readmodels/aggregate-projection.js';
import type { ReadModelStore } from '../../src/readmodels/port.js';
import { openPostgresReadModels } from '../../src/readmodels/postgres.js';
import { openSqliteReadModels } from '../../src/readmodels/sqlite.js';
import { deliveryDecider, deliveryIdFor, type Delivery } from '../../src/webhooks/delivery.decider.js';
import {
  dueBySubscription,
  firstSweep,
  sweepLimits,
  type SweepPage,
  type SweepPosition,
} from '../../src/webhooks/sweep.js';
import { tempDir } from '../support/adapters.js';
import { describePostgres } from '../support/postgres.js';
import { startReceiver } from '../support/receiver.js';
import { request, startTestServer, withTenant } from '../support/server.js';
import { eventually } from '../support/wait.js';

const horizon = new Date('2026-06-01T12:00:00.000Z');
const before = (seconds: number) => new Date(horizon.getTime() - seconds * 1000).toISOString();

/** A delivery's document as the read model keeps it (the sweep reads only these fields). */
const delivery = (webhookId: string, n: number, dueAt: string, status = 'scheduled') => ({
  id: `d_${webhookId}_${String(n).padStart(5, '0')}`,
  deliveryId: `d_${webhookId}_${String(n).padStart(5, '0')}`,
  tenantId: 't_sweep',
  webhookId,
  eventId: `evt_${n}`,
  eventType: 'observation.created',
  status,
  attempts: 1,
  dueAt: status === 'scheduled' ? dueAt : null,
  claimedAt: null,
  claimId: null,
  manual: false,
  test: false,
  updatedAt: dueAt,
});

/** The round-robin sweep over a real read-model store: one hung receiver's backlog cannot crowd out the rest. */
const sweepOver = (open: () => Promise<{ readModels: ReadModelStore; close: () => Promise<void> }>) => {
  let readModels: ReadModelStore;
  let close: () => Promise<void>;
  let collection: string;
  beforeEach(async () => {
    ({ readModels, close } = await open());
    collection = `webhook_deliveries_${randomUUID().replace(/-/g, '').slice(0, 8)}`;
    await readModels.ensureCollection(deliveriesProjection.collection, collection);
  });
  afterEach(async () => {
    await readModels.dropCollection(collection);
    await close();
  });
  let position = 0;
  const put = (docs: ReturnType<typeof delivery>[]) =>
    readModels.commit(
      `sweep-${collection}`,
      docs.map((doc) => ({ collection, tenantId: platformPartition, id: doc.id, position: ++position, doc })),
      position,
    );

  it("reaches another subscription's due retry in one sweep behind a backlog of 1,500 older due deliveries of a hung one", async () => {
    await put([
      ...Array.from({ length: 1500 }, (_, n) => delivery('w_hung', n, before(3600 - n))),
      delivery('w_other', 1, before(1)),
      delivery('w_later', 1, new Date(horizon.getTime() + 60_000).toISOString()),
      delivery('w_done', 1, before(7200), 'succeeded'),
    ]);
    const { due, next } = await dueBySubscription(readModels, collection, horizon, firstSweep);
    const by = (webhookId: string) => due.filter((found) => found.webhookId === webhookId);
    expect(by('w_other').map((found) => found.deliveryId)).to.deep.equal(['d_w_other_00001']);
    // The hung subscription gets its share, its oldest first; nothing not due, nothing settled.
    expect(by('w_hung')).to.have.length(sweepLimits.perSubscription);
    expect(by('w_hung')[0]!.deliveryId).to.equal('d_w_hung_00000');
    expect(by('w_later')).to.deep.equal([]);
    expect(by('w_done')).to.deep.equal([]);
    // A complete round starts the next one from the first subscription, still round-robin: the hung
    // subscription had more due than its share.
    expect(next).to.deep.equal({ backlog: true, cursor: null });

    // Once a round sees all that is due, the next sweep takes the oldest due in one query again.
    await put(Array.from({ length: 1500 }, (_, n) => delivery('w_hung', n, before(3600 - n), 'succeeded')));
    const after = await dueBySubscription(readModels, collection, horizon, next);
    expect(after.due.map((found) => found.deliveryId)).to.deep.equal(['d_w_other_00001']);
    expect(after.next).to.deep.equal({ backlog: false, cursor: null });
  });

  it('takes every due delivery, beyond any share, when fewer are due than a sweep takes', async () => {
    await put([
      ...Array.from({ length: 300 }, (_, n) => delivery('w_busy', n, before(600 - n))),
      delivery('w_other', 1, before(1)),
    ]);
    const kept = { backlog: false, cursor: 'w_kept' };
    const { due, next } = await dueBySubscription(readModels, collection, horizon, kept);
    expect(due).to.have.length(301);
    expect(due[0]!.deliveryId, 'oldest first').to.equal('d_w_busy_00000');
    expect(next, 'no round-robin sweep: its place is kept').to.deep.equal(kept);
  });

  it('goes on where the last sweep stopped when the limits cut a round short, and comes round again', async () => {
    await put(
      ['w_a', 'w_b', 'w_c'].flatMap((webhookId) => [1, 2, 3].map((n) => delivery(webhookId, n, before(n)))),
    );
    const limits = { deliveries: 5, perSubscription: 2, subscriptions: 2 };
    const sweeps: { subscriptions: string[]; cursor: string | null }[] = [];
    let from: SweepPosition = firstSweep;
    for (let sweep = 0; sweep < 3; sweep += 1) {
      const page: SweepPage = await dueBySubscription(readModels, collection, horizon, from, limits);
      for (const [webhookId, count] of Object.entries(countBy(page.due)))
        expect(count, `${webhookId} gets at most its share`).to.equal(2);
      sweeps.push({
        subscriptions: [...new Set(page.due.map((found) => found.webhookId))],
        cursor: page.next.cursor,
      });
      from = page.next;
    }
    expect(sweeps).to.deep.equal([
      { subscriptions: ['w_a', 'w_b'], cursor: 'w_b' },
      { subscriptions: ['w_c', 'w_a'], cursor: 'w_a' },
      { subscriptions: ['w_b', 'w_c'], cursor: 'w_c' },
    ]);
    // The limit on deliveries in all ends a sweep early too, and the next goes on from there.
    const short = await dueBySubscription(readModels, collection, horizon, firstSweep, {
      ...limits,
      deliveries: 3,
    });
    expect(short.due.map((found) => found.webhookId)).to.deep.equal(['w_a', 'w_a', 'w_b']);
    expect(short.next).to.deep.equal({ backlog: true, cursor: 'w_b' });
  });
};

const countBy = (due: Delivery[]) =>
  due.reduce<Record<string, number>>((counts, found) => {
    counts[found.webhookId] = (counts[found.webhookId] ?? 0) + 1;
    return counts;
  }, {});

describe('the retry sweep', function () {
  this.timeout(60_000);

  describe('on the embedded SQLite read models', () => {
    sweepOver(() => {
      const { dir, remove } = tempDir();
      const readModels = openSqliteReadModels(join(dir, 'readmodels.db'));
      return Promise.resolve({
        readModels,
        close: async () => {
          await readModels.close();
          remove();
        },
      });
    });
  });

  describePostgres('on the PostgreSQL read models', (url) => {
    sweepOver(async () => {
      const readModels = await openPostgresReadModels(url);
      return { readModels, close: () => readModels.close() };
    });
  });

  /**
   * Issue 23, finding 3, end to end: a service whose one subscription has a hung receiver and a backlog of
   * 1,200 due deliveries, older than another tenant's due retry. The retry is 3 s out, past the 2 s the
   * deliverer looks ahead after an attempt, so only a sweep can start it. Before the sweep was fair, every
   * sweep took the 1,000 oldest due deliveries, all the hung one's, and the retry waited for that backlog
   * to drain (1,196 more attempts of 20 s each, 4 at a time: about 100 minutes).
   */
  it("attempts another tenant's due retry while a hung receiver's backlog of 1,200 older deliveries stands", async () => {
    const server = await startTestServer({
      WEBHOOK_ALLOW_HTTP: 'true',
      WEBHOOK_RETRY_SCHEDULE: '3s',
      WEBHOOK_TIMEOUT: '20s',
    });
    const secret = `whsec_${randomBytes(32).toString('base64')}`;
    const hung = await startReceiver(secret, () => 'hang');
    let answers = 0;
    const other = await startReceiver(secret, () => (++answers === 1 ? 500 : 204));
    try {
      const subscribe = async (name: string, url: string) => {
        const tenant = await withTenant(server, name);
        const created = await request(`${server.url}/v1/tenants/${tenant.tenantId}/webhooks`, {
          method: 'POST',
          body: { url, events: ['observation.created'], secret },
          headers: { 'X-API-Key': tenant.adminKey },
        });
        expect(created.status, JSON.stringify(created.body)).to.equal(201);
        return { ...tenant, webhookId: created.body.id as string };
      };
      const a = await subscribe('hung', hung.url);
      const b = await subscribe('other', other.url);

      // The backlog, scheduled as the projector schedules a delivery that finds no free slot.
      const { eventStore, readModels } = server.stores;
      const backlog = 1200;
      for (let start = 0; start < backlog; start += 100) {
        await Promise.all(
          Array.from({ length: 100 }, async (_, offset) => {
            const eventId = `evt_backlog_${start + offset}`;
            const deliveryId = deliveryIdFor(a.webhookId, eventId);
            await handleCommand(
              eventStore,
              deliveryDecider,
              streamName('delivery', a.tenantId, deliveryId),
              {
                type: 'Schedule',
                identity: { deliveryId, webhookId: a.webhookId, eventId, eventType: 'observation.created' },
                payload: {
                  id: eventId,
                  type: 'observation.created',
                  tenantId: a.tenantId,
                  timestamp: new Date().toISOString(),
                  data: { observationId: `o_${start + offset}` },
                },
                now: new Date(),
              },
              systemContextOf('system:webhooks')(a.tenantId, new Date(), null),
            );
          }),
        );
      }
      // The sweeps have found the backlog: four attempts hang, the rest wait, due, in the read model.
      await hung.waitFor(4, 15_000);
      await eventually(
        async () => {
          const waiting = await readModels.list<Delivery>(deliveriesProjection.collection.name, {
            tenantId: platformPartition,
            filters: [{ op: 'eq', field: 'status', value: 'scheduled' }],
            sort: { field: 'dueAt', direction: 'asc' },
            limit: backlog,
          });
          return waiting.length >= backlog - 4 ? waiting : undefined;
        },
        15_000,
        'the backlog in the read model',
      );

      // The other tenant's event: its first attempt fails at once, its retry is due 3 s later.
      const observed = await request(`${server.url}/v1/tenants/${b.tenantId}/observations`, {
        method: 'POST',
        body: { observedAt: '2026-05-01T09:30:00Z', notes: 'a fox' },
        headers: { 'X-API-Key': b.adminKey },
      });
      expect(observed.status, JSON.stringify(observed.body)).to.equal(201);
      await other.waitFor(1, 15_000);
      // Due 3 s after the failure; reached by the sweep within a second of that (allowed: 15 s in all, for
      // a busy machine). The old sweep never reached it while the backlog stood.
      const [first, retried] = await other.waitFor(2, 18_000);
      expect(retried!.status).to.equal(204);
      expect(retried!.body.id, 'the same delivery, retried').to.equal(first!.body.id);
      expect(hung.received, 'the hung backlog still stands: the retry did not wait for it').to.have.length(4);
    } finally {
      await hung.close();
      await other.close();
      await server.close();
    }
  });
});
