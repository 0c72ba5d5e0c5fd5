import { expect } from 'chai';
import type { RecordedEvent } from '../../src/core/events.js';
import { VersionConflictError } from '../../src/core/errors.js';
import type { ConsumerOutcome, EventStore, PersistentEvent } from '../../src/eventstore/port.js';
import { anEvent, eventually, uniqueTenant } from '../support/events.js';
import { eventHash, genesisHash } from '../../src/eventstore/hash-chain.js';
import Database from 'better-sqlite3';
import { pino } from 'pino';
import { supervise } from '../../src/core/supervisor.js';

const silent = pino({ level: 'silent' });

/**
 * The behaviour every EventStore adapter promises. Each test works in its own tenant and stream names, so
 * the suite can run against a shared server that holds other data.
 */
export const eventStoreContract = (
  open: () => Promise<{
    store: EventStore;
    /** Another connection to the same store, as another process would have. */
    another: () => Promise<EventStore>;
    close: () => Promise<void>;
  }>,
  { exclusiveLeases }: { exclusiveLeases: boolean },
) => {
  let store: EventStore;
  let another: () => Promise<EventStore>;
  let close: () => Promise<void>;
  let tenant: string;
  const stream = (kind: string, id: string) => `${kind}-${tenant}_${id}`;

  beforeEach(async () => {
    ({ store, another, close } = await open());
    tenant = uniqueTenant();
  });
  afterEach(async () => close());

  describe('appending and reading a stream', () => {
    it('numbers events from 0 and reads them back in order with their metadata', async () => {
      const events = [anEvent('ThingHappened', { n: 1 }, tenant), anEvent('ThingHappened', { n: 2 }, tenant)];
      const result = await store.appendToStream(stream('thing', 'a'), events, 'no_stream');
      expect(result.nextExpectedVersion).to.equal(1);

      const read = await store.readStream(stream('thing', 'a'));
      expect(read.map((e) => [e.streamVersion, e.data])).to.deep.equal([
        [0, { n: 1 }],
        [1, { n: 2 }],
      ]);
      expect(read[0]?.id).to.equal(events[0]?.id);
      expect(read[0]?.metadata).to.deep.equal(events[0]?.metadata);
      expect(read[1]?.position).to.be.greaterThan(read[0]?.position ?? Infinity);
      expect(result.lastPosition).to.be.at.least(read[1]?.position ?? Infinity);
    });

    it('returns an empty list for a stream that does not exist', async () => {
      expect(await store.readStream(stream('thing', 'missing'))).to.deep.equal([]);
    });

    it('reads from a version on', async () => {
      await store.appendToStream(
        stream('thing', 'b'),
        [1, 2, 3].map((n) => anEvent('ThingHappened', { n }, tenant)),
        'no_stream',
      );
      const read = await store.readStream(stream('thing', 'b'), { fromVersion: 1 });
      expect(read.map((e) => e.data)).to.deep.equal([{ n: 2 }, { n: 3 }]);
    });
  });

  describe('tamper evidence', () => {
    it('chains every event to the previous one of its stream with a hash over its content', async () => {
      await store.appendToStream(
        stream('thing', 'chain'),
        [anEvent('A', { n: 1 }, tenant), anEvent('B', { n: 2 }, tenant)],
        'no_stream',
      );
      await store.appendToStream(stream('thing', 'chain'), [anEvent('C', { n: 3 }, tenant)], 'any');
      const events = await store.readStream(stream('thing', 'chain'));
      let previous = genesisHash;
      for (const event of events) {
        expect(event.hash).to.equal(eventHash(previous, event));
        previous = event.hash!;
      }
      const [fromAll] = (await store.readAll({ filter: { streamPrefixes: [stream('thing', 'chain')] } }))
        .events;
      expect(fromAll?.hash).to.equal(events[0]?.hash);
    });
  });

  describe('optimistic concurrency', () => {
    it('appends when the stream is at the expected version', async () => {
      await store.appendToStream(stream('thing', 'c'), [anEvent('A', {}, tenant)], 'no_stream');
      const result = await store.appendToStream(stream('thing', 'c'), [anEvent('B', {}, tenant)], 0);
      expect(result.nextExpectedVersion).to.equal(1);
    });

    it('refuses a stale expected version and writes nothing', async () => {
      await store.appendToStream(stream('thing', 'd'), [anEvent('A', {}, tenant)], 'no_stream');
      await store.appendToStream(stream('thing', 'd'), [anEvent('B', {}, tenant)], 0);
      const error = await store
        .appendToStream(stream('thing', 'd'), [anEvent('C', {}, tenant), anEvent('D', {}, tenant)], 0)
        .catch((e: unknown) => e);
      expect(error).to.be.instanceOf(VersionConflictError);
      expect((error as VersionConflictError).actual).to.equal(1);
      expect((await store.readStream(stream('thing', 'd'))).map((e) => e.type)).to.deep.equal(['A', 'B']);
    });

    it('refuses no_stream for an existing stream and stream_exists for a missing one', async () => {
      await store.appendToStream(stream('thing', 'e'), [anEvent('A', {}, tenant)], 'no_stream');
      const missing = await store
        .appendToStream(stream('thing', 'f'), [anEvent('B', {}, tenant)], 'stream_exists')
        .catch((e: unknown) => e);
      expect(missing).to.be.instanceOf(VersionConflictError);
      const stale = await store
        .appendToStream(stream('thing', 'e'), [anEvent('B', {}, tenant)], 'no_stream')
        .catch((e: unknown) => e);
      expect(stale).to.be.instanceOf(VersionConflictError);
    });

    it('refuses version -1 (a create decided without a read) for an existing stream, and writes nothing', async () => {
      await store.appendToStream(stream('thing', 'h'), [anEvent('A', {}, tenant)], -1);
      const error = await store
        .appendToStream(stream('thing', 'h'), [anEvent('B', {}, tenant), anEvent('C', {}, tenant)], -1)
        .catch((e: unknown) => e);
      expect(error).to.be.instanceOf(VersionConflictError);
      expect((error as VersionConflictError).actual).to.equal(0);
      const stored = await store.readStream(stream('thing', 'h'));
      expect(stored.map((e) => e.type)).to.deep.equal(['A']);
      // Started at -1, the chain starts as one started with no_stream does.
      expect(stored[0]!.hash).to.equal(eventHash(genesisHash, stored[0]!));
    });

    it('lets exactly one of two racing appends with the same expected version win', async () => {
      await store.appendToStream(stream('thing', 'g'), [anEvent('A', {}, tenant)], 'no_stream');
      const outcomes = await Promise.allSettled([
        store.appendToStream(stream('thing', 'g'), [anEvent('B', {}, tenant)], 0),
        store.appendToStream(stream('thing', 'g'), [anEvent('C', {}, tenant)], 0),
      ]);
      expect(outcomes.filter((o) => o.status === 'fulfilled')).to.have.length(1);
      expect(await store.readStream(stream('thing', 'g'))).to.have.length(2);
    });
  });

  describe('reading all events', () => {
    const seed = async () => {
      await store.appendToStream(stream('alpha', '1'), [anEvent('AlphaMade', { i: 1 }, tenant)], 'no_stream');
      await store.appendToStream(stream('beta', '1'), [anEvent('BetaMade', { i: 2 }, tenant)], 'no_stream');
      await store.appendToStream(stream('alpha', '2'), [anEvent('AlphaMade', { i: 3 }, tenant)], 'no_stream');
    };

    it('filters by stream prefix, in commit order', async () => {
      await seed();
      const page = await store.readAll({ filter: { streamPrefixes: [`alpha-${tenant}_`] } });
      expect(page.events.map((e) => e.data)).to.deep.equal([{ i: 1 }, { i: 3 }]);
      expect(page.isEnd).to.equal(true);
    });

    it('filters by event type and tenant', async () => {
      await seed();
      const page = await store.readAll({ filter: { eventTypes: ['BetaMade'], tenantId: tenant } });
      expect(page.events.map((e) => e.data)).to.deep.equal([{ i: 2 }]);
    });

    it('merges several event types in commit order, in pages, each event once, and no types match nothing', async () => {
      await seed();
      await store.appendToStream(stream('beta', '2'), [anEvent('BetaMade', { i: 4 }, tenant)], 'no_stream');
      const filter = {
        eventTypes: ['BetaMade', 'AlphaMade', 'BetaMade'],
        tenantId: tenant,
        streamPrefixes: [`alpha-${tenant}_`, `beta-${tenant}_`],
      };
      const first = await store.readAll({ maxCount: 3, filter });
      expect(first.events.map((e) => e.data)).to.deep.equal([{ i: 1 }, { i: 2 }, { i: 3 }]);
      const rest = await store.readAll({ after: first.lastPosition, maxCount: 3, filter });
      expect(rest.events.map((e) => e.data)).to.deep.equal([{ i: 4 }]);
      expect(rest.isEnd).to.equal(true);
      const none = await store.readAll({ filter: { eventTypes: [], tenantId: tenant } });
      expect(none.events).to.deep.equal([]);
    });

    it('reads one tenant history in commit order, from an exclusive position, in pages', async () => {
      await seed();
      const first = await store.readAll({ maxCount: 2, filter: { tenantId: tenant } });
      expect(first.events.map((e) => e.data)).to.deep.equal([{ i: 1 }, { i: 2 }]);
      expect(first.isEnd).to.equal(false);
      const second = await store.readAll({
        after: first.lastPosition,
        maxCount: 2,
        filter: { tenantId: tenant },
      });
      expect(second.events.map((e) => e.data)).to.deep.equal([{ i: 3 }]);
      expect(second.isEnd).to.equal(true);
      expect(second.lastPosition).to.be.at.least(second.events[0]?.position ?? Infinity);
    });

    it('reads one tenant history newest first, before an exclusive position, in pages', async () => {
      await seed();
      const first = await store.readAllBackward({ maxCount: 2, filter: { tenantId: tenant } });
      expect(first.events.map((e) => e.data)).to.deep.equal([{ i: 3 }, { i: 2 }]);
      expect(first.isStart).to.equal(false);
      const second = await store.readAllBackward({
        before: first.lastPosition,
        maxCount: 2,
        filter: { tenantId: tenant },
      });
      expect(second.events.map((e) => e.data)).to.deep.equal([{ i: 1 }]);
      expect(second.isStart).to.equal(true);
    });

    it('reads several event types newest first, each event once', async () => {
      await seed();
      await store.appendToStream(stream('beta', '2'), [anEvent('BetaMade', { i: 4 }, tenant)], 'no_stream');
      const filter = { eventTypes: ['BetaMade', 'AlphaMade'], tenantId: tenant };
      const first = await store.readAllBackward({ maxCount: 3, filter });
      expect(first.events.map((e) => e.data)).to.deep.equal([{ i: 4 }, { i: 3 }, { i: 2 }]);
      const rest = await store.readAllBackward({ before: first.lastPosition, maxCount: 3, filter });
      expect(rest.events.map((e) => e.data)).to.deep.equal([{ i: 1 }]);
      const betas = await store.readAllBackward({ filter: { eventTypes: ['BetaMade'], tenantId: tenant } });
      expect(betas.events.map((e) => e.data)).to.deep.equal([{ i: 4 }, { i: 2 }]);
    });

    it('reads one tenant stream by stream, in name then version order, as stored, in pages', async () => {
      const other = uniqueTenant();
      await store.appendToStream(stream('beta', '1'), [anEvent('BetaMade', { i: 1 }, tenant)], 'no_stream');
      await store.appendToStream(`alpha-${other}_1`, [anEvent('AlphaMade', { i: 0 }, other)], 'no_stream');
      await store.appendToStream(stream('alpha', '2'), [anEvent('AlphaMade', { i: 2 }, tenant)], 'no_stream');
      await store.appendToStream(stream('beta', '1'), [anEvent('BetaChanged', { i: 3 }, tenant)], 0);
      await store.appendToStream(stream('alpha', '1'), [anEvent('AlphaMade', { i: 4 }, tenant)], 'no_stream');
      const pages: RecordedEvent[][] = [];
      for await (const page of store.readTenantByStream(tenant, { pageSize: 2 })) pages.push(page);
      expect(pages.map((page) => page.length)).to.deep.equal([2, 2]);
      const events = pages.flat();
      expect(events.map((e) => [e.streamName, e.streamVersion, e.data])).to.deep.equal([
        [stream('alpha', '1'), 0, { i: 4 }],
        [stream('alpha', '2'), 0, { i: 2 }],
        [stream('beta', '1'), 0, { i: 1 }],
        [stream('beta', '1'), 1, { i: 3 }],
      ]);
      const inCommitOrder = (await store.readAll({ filter: { tenantId: tenant }, raw: true })).events;
      const byId = new Map(inCommitOrder.map((e) => [e.id, e]));
      for (const event of events) expect(event).to.deep.equal(byId.get(event.id));
    });

    it('reads a tenant event stored under a name of no tenant too, in its place by name', async () => {
      await store.appendToStream(stream('alpha', '1'), [anEvent('AlphaMade', { i: 1 }, tenant)], 'no_stream');
      const odd = `zeta_${tenant}`;
      await store.appendToStream(odd, [anEvent('Odd', { i: 2 }, tenant)], 'no_stream');
      const read: RecordedEvent[] = [];
      for await (const page of store.readTenantByStream(tenant)) read.push(...page);
      expect(read.map((e) => e.streamName)).to.deep.equal([stream('alpha', '1'), odd]);
    });

    it('knows its head position', async () => {
      await seed();
      const page = await store.readAll({ filter: { tenantId: tenant } });
      expect(await store.headPosition()).to.be.at.least(page.events[2]?.position ?? Infinity);
    });
  });

  describe('catch-up subscriptions', () => {
    it('delivers history after the checkpoint, then live appends, until stopped', async () => {
      await store.appendToStream(stream('thing', 'h'), [anEvent('A', { n: 1 }, tenant)], 'no_stream');
      await store.appendToStream(stream('thing', 'h'), [anEvent('A', { n: 2 }, tenant)], 0);
      const [first] = await store.readStream(stream('thing', 'h'));
      const seen: RecordedEvent[] = [];
      const subscription = store.subscribe(
        { after: first?.position ?? 0, filter: { tenantId: tenant } },
        async (events) => {
          seen.push(...events);
          await Promise.resolve();
        },
      );
      await eventually(() => seen.length === 1);
      await store.appendToStream(stream('thing', 'h'), [anEvent('A', { n: 3 }, tenant)], 1);
      await eventually(() => seen.length === 2);
      expect(seen.map((e) => e.data)).to.deep.equal([{ n: 2 }, { n: 3 }]);

      await subscription.stop();
      await store.appendToStream(stream('thing', 'h'), [anEvent('A', { n: 4 }, tenant)], 2);
      // On purpose: time for a stopped subscription to deliver what it must not.
      await new Promise((resolve) => setTimeout(resolve, 100));
      expect(seen).to.have.length(2);
    });

    it('ends with the handler error', async () => {
      await store.appendToStream(stream('thing', 'i'), [anEvent('A', {}, tenant)], 'no_stream');
      const subscription = store.subscribe({ after: 0, filter: { tenantId: tenant } }, () =>
        Promise.reject(new Error('handler broke')),
      );
      const error = await subscription.done.then(
        () => null,
        (e: unknown) => e,
      );
      expect((error as Error).message).to.equal('handler broke');
    });
  });

  describe('persistent subscriptions', () => {
    const consume = (group: string, decide: (d: PersistentEvent) => ConsumerOutcome) => {
      const deliveries: PersistentEvent[] = [];
      const subscription = store.subscribePersistent(group, (delivery) => {
        deliveries.push(delivery);
        return Promise.resolve(decide(delivery));
      });
      return { deliveries, subscription };
    };
    const ack: ConsumerOutcome = { kind: 'ack' };
    const groupName = () => `test-${tenant}`;

    it('delivers each event once to the group and resumes after the last ack', async () => {
      const group = groupName();
      await store.ensurePersistentSubscription(group, {
        startFrom: 'start',
        maxRetryCount: 2,
        filter: { tenantId: tenant },
      });
      await store.appendToStream(stream('thing', 'j'), [anEvent('A', { n: 1 }, tenant)], 'no_stream');
      const first = consume(group, () => ack);
      await eventually(() => first.deliveries.length === 1);
      await first.subscription.stop();

      await store.appendToStream(stream('thing', 'j'), [anEvent('A', { n: 2 }, tenant)], 0);
      const second = consume(group, () => ack);
      await eventually(() => second.deliveries.length === 1);
      expect(second.deliveries[0]?.event.data).to.deep.equal({ n: 2 });
      await second.subscription.stop();
    });

    it('retries a nacked event with a growing retry count and parks it after the maximum', async () => {
      const group = groupName();
      await store.ensurePersistentSubscription(group, {
        startFrom: 'start',
        maxRetryCount: 2,
        filter: { tenantId: tenant },
      });
      await store.appendToStream(
        stream('thing', 'k'),
        [anEvent('Bad', {}, tenant), anEvent('Good', {}, tenant)],
        'no_stream',
      );
      const { deliveries, subscription } = consume(group, (d) =>
        d.event.type === 'Bad' ? { kind: 'nack', action: 'retry', reason: 'receiver down' } : ack,
      );
      await eventually(() => deliveries.some((d) => d.event.type === 'Good'));
      const bad = deliveries.filter((d) => d.event.type === 'Bad');
      expect(bad.map((d) => d.retryCount)).to.deep.equal([0, 1, 2]);
      await eventually(async () => (await store.listParked(group)).length === 1);
      const [parked] = await store.listParked(group);
      expect(parked?.event.type).to.equal('Bad');
      await subscription.stop();
    });

    it('with concurrency, has several events in the handler at once, and still settles each on its own', async () => {
      const group = groupName();
      await store.ensurePersistentSubscription(group, {
        startFrom: 'start',
        maxRetryCount: 1,
        filter: { tenantId: tenant },
      });
      const types = ['A', 'B', 'Bad', 'C', 'D', 'E'];
      for (const [index, type] of types.entries()) {
        await store.appendToStream(stream('thing', `conc${index}`), [anEvent(type, {}, tenant)], 'no_stream');
      }
      let inHandler = 0;
      let most = 0;
      const deliveries: PersistentEvent[] = [];
      const subscription = store.subscribePersistent(
        group,
        async (delivery) => {
          deliveries.push(delivery);
          inHandler += 1;
          most = Math.max(most, inHandler);
          await new Promise((resolve) => setTimeout(resolve, 20));
          inHandler -= 1;
          return delivery.event.type === 'Bad' ? { kind: 'nack', action: 'retry', reason: 'no' } : ack;
        },
        { concurrency: 4 },
      );
      await eventually(async () => (await store.listParked(group)).length === 1);
      await eventually(() => new Set(deliveries.map((d) => d.event.type)).size === types.length);
      await subscription.stop();
      expect(most, 'events in the handler at once').to.be.within(2, 4);
      // Each good event once; the bad one retried on its own, then parked.
      for (const type of ['A', 'B', 'C', 'D', 'E']) {
        expect(
          deliveries.filter((d) => d.event.type === type),
          type,
        ).to.have.length(1);
      }
      expect(deliveries.filter((d) => d.event.type === 'Bad').map((d) => d.retryCount)).to.deep.equal([0, 1]);

      // Nothing is delivered again to the group: it resumes past all six.
      await store.appendToStream(stream('thing', 'conc-last'), [anEvent('Z', {}, tenant)], 'no_stream');
      const next = consume(group, () => ack);
      await eventually(() => next.deliveries.length === 1);
      expect(next.deliveries[0]?.event.type).to.equal('Z');
      await next.subscription.stop();
    });

    it('parks at once on nack park, and delivers parked events again on replay', async () => {
      const group = groupName();
      await store.ensurePersistentSubscription(group, {
        startFrom: 'start',
        maxRetryCount: 5,
        filter: { tenantId: tenant },
      });
      await store.appendToStream(stream('thing', 'l'), [anEvent('Poison', {}, tenant)], 'no_stream');
      let accept = false;
      const { deliveries, subscription } = consume(group, () =>
        accept ? ack : { kind: 'nack', action: 'park', reason: 'cannot handle' },
      );
      await eventually(async () => (await store.listParked(group)).length === 1);
      expect(deliveries).to.have.length(1);
      expect((await store.listParked(group))[0]?.reason).to.equal('cannot handle');

      accept = true;
      await store.replayParked(group);
      await eventually(() => deliveries.length === 2);
      await eventually(async () => (await store.listParked(group)).length === 0);
      await subscription.stop();
    });

    it('starts a group created with startFrom end after the events already stored', async () => {
      await store.appendToStream(stream('thing', 'm'), [anEvent('Old', {}, tenant)], 'no_stream');
      const group = groupName();
      await store.ensurePersistentSubscription(group, {
        startFrom: 'end',
        maxRetryCount: 1,
        filter: { tenantId: tenant },
      });
      const { deliveries, subscription } = consume(group, () => ack);
      await store.appendToStream(stream('thing', 'm'), [anEvent('New', {}, tenant)], 0);
      await eventually(() => deliveries.length === 1);
      expect(deliveries[0]?.event.type).to.equal('New');
      await subscription.stop();
    });

    it('keeps the checkpoint of an existing group when it is ensured again', async () => {
      const group = groupName();
      const settings = { startFrom: 'start', maxRetryCount: 1, filter: { tenantId: tenant } } as const;
      await store.ensurePersistentSubscription(group, settings);
      await store.appendToStream(stream('thing', 'n'), [anEvent('A', {}, tenant)], 'no_stream');
      const first = consume(group, () => ack);
      await eventually(() => first.deliveries.length === 1);
      await first.subscription.stop();
      await store.ensurePersistentSubscription(group, settings);
      await store.appendToStream(stream('thing', 'n'), [anEvent('B', {}, tenant)], 0);
      const second = consume(group, () => ack);
      await eventually(() => second.deliveries.length === 1);
      expect(second.deliveries.map((d) => d.event.type)).to.deep.equal(['B']);
      await second.subscription.stop();
    });

    it('answers the group checkpoint in store positions, where the adapter keeps one (for the lag metrics)', async function () {
      if (!store.groupCheckpoint) return this.skip();
      const group = groupName();
      expect(await store.groupCheckpoint(group)).to.equal(null);
      await store.ensurePersistentSubscription(group, {
        startFrom: 'start',
        maxRetryCount: 1,
        filter: { tenantId: tenant },
      });
      const { lastPosition } = await store.appendToStream(
        stream('thing', 'q'),
        [anEvent('A', {}, tenant)],
        'no_stream',
      );
      const consumer = consume(group, () => ack);
      await eventually(() => consumer.deliveries.length === 1);
      await consumer.subscription.stop();
      expect(await store.groupCheckpoint(group)).to.equal(lastPosition);
    });
  });

  describe('wake-ups are only hints', () => {
    /** Appends a wanted event through another connection, then at once an unwanted one through this one. */
    const appendElsewhereThenHere = async (id: string) => {
      const other = await another();
      try {
        await other.appendToStream(stream('thing', `${id}-a`), [anEvent('Wanted', {}, tenant)], 'no_stream');
        await store.appendToStream(
          stream('thing', `${id}-b`),
          [anEvent('Unwanted', {}, tenant)],
          'no_stream',
        );
      } finally {
        if (other !== store) await other.close();
      }
    };

    it('delivers to a catch-up subscription what another connection appended just before this one', async () => {
      const seen: RecordedEvent[] = [];
      const subscription = store.subscribe(
        { after: await store.headPosition(), filter: { eventTypes: ['Wanted'], tenantId: tenant } },
        (events) => {
          seen.push(...events);
          return Promise.resolve();
        },
      );
      await new Promise((resolve) => setTimeout(resolve, 100)); // caught up and asleep
      await appendElsewhereThenHere('k');
      await eventually(() => seen.length === 1, 3000);
      await subscription.stop();
    });

    it('delivers to a consumer group what another connection appended just before this one', async () => {
      const group = `test-hint-${tenant}`;
      await store.ensurePersistentSubscription(group, {
        startFrom: 'end',
        maxRetryCount: 2,
        filter: { eventTypes: ['Wanted'], tenantId: tenant },
      });
      const seen: PersistentEvent[] = [];
      const subscription = store.subscribePersistent(group, (delivery) => {
        seen.push(delivery);
        return Promise.resolve({ kind: 'ack' });
      });
      await new Promise((resolve) => setTimeout(resolve, 100)); // caught up and asleep
      await appendElsewhereThenHere('l');
      await eventually(() => seen.length === 1, 3000);
      await subscription.stop();
    });
  });

  describe('under a supervisor', () => {
    const quickly = { initialMs: 20, maxMs: 100, resetAfterMs: 10_000 };

    it('starts a failed catch-up subscription again from its checkpoint, skipping nothing', async () => {
      await store.appendToStream(
        stream('thing', 'm'),
        [1, 2, 3, 4, 5].map((n) => anEvent('A', { n }, tenant)),
        'no_stream',
      );
      const applied: unknown[] = [];
      let checkpoint = 0;
      let failed = false;
      const supervised = supervise(
        'test',
        () =>
          store.subscribe(
            { after: checkpoint, filter: { tenantId: tenant }, batchSize: 1 },
            (events, last) => {
              if (events.some((event) => (event.data as { n: number }).n === 3) && !failed) {
                failed = true;
                return Promise.reject(new Error('the disk is full'));
              }
              applied.push(...events.map((event) => event.data));
              checkpoint = last;
              return Promise.resolve();
            },
          ),
        { logger: silent, backOff: quickly },
      );
      await eventually(() => applied.length === 5);
      expect(applied).to.deep.equal([1, 2, 3, 4, 5].map((n) => ({ n })));
      const status = supervised.status();
      expect(status).to.include({ state: 'running', restarts: 1, lastError: 'the disk is full' });
      // The failure is kept as history, and says it is over.
      expect(Date.parse(status.recoveredAt!)).to.be.at.least(Date.parse(status.lastErrorAt!));
      await supervised.stop();
      expect(supervised.status().state).to.equal('stopped');
    });

    it('starts a consumer again when the store fails under its handler, and the event is not parked', async () => {
      const group = `test-full-${tenant}`;
      await store.ensurePersistentSubscription(group, {
        startFrom: 'start',
        maxRetryCount: 0,
        filter: { tenantId: tenant },
      });
      await store.appendToStream(stream('thing', 'n'), [anEvent('A', {}, tenant)], 'no_stream');
      let deliveries = 0;
      const supervised = supervise(
        group,
        () =>
          store.subscribePersistent(group, () => {
            deliveries += 1;
            if (deliveries === 1) {
              return Promise.reject(new Database.SqliteError('database or disk is full', 'SQLITE_FULL'));
            }
            return Promise.resolve({ kind: 'ack' });
          }),
        { logger: silent, backOff: quickly },
      );
      await eventually(() => deliveries === 2, 10_000);
      expect(supervised.status().restarts).to.equal(1);
      expect(await store.listParked(group)).to.deep.equal([]);
      await supervised.stop();
    });
  });

  describe('leases', () => {
    it('grants a lease to its owner and renews it', async () => {
      const name = `duty-${tenant}`;
      expect((await store.acquireLease(name, 'one', 60_000)).acquired).to.equal(true);
      const renewed = await store.acquireLease(name, 'one', 60_000);
      expect(renewed).to.include({ acquired: true, holder: 'one' });
      await store.releaseLease(name, 'one');
    });

    if (exclusiveLeases) {
      it('refuses a second owner until the lease runs out or is released', async () => {
        const name = `duty-${tenant}`;
        const other = await another();
        try {
          await store.acquireLease(name, 'one', 300);
          expect(await other.acquireLease(name, 'two', 300)).to.include({ acquired: false, holder: 'one' });
          // A real wait: the stores time leases by their own clock (the database's or the system's).
          await new Promise((resolve) => setTimeout(resolve, 350));
          expect(await other.acquireLease(name, 'two', 60_000)).to.include({ acquired: true, holder: 'two' });
          expect((await store.acquireLease(name, 'one', 60_000)).acquired).to.equal(false);
          await other.releaseLease(name, 'two');
          expect((await store.acquireLease(name, 'one', 60_000)).acquired).to.equal(true);
        } finally {
          await other.close();
        }
      });
    }
  });
};
