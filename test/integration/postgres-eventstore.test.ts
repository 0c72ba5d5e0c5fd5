import { expect } from 'chai';
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import type { RecordedEvent } from '../../src/core/events.js';
import { UnavailableError, VersionConflictError } from '../../src/core/errors.js';
import { verifyTenant } from '../../src/audit/verify.js';
import type { EventStore, PersistentEvent } from '../../src/eventstore/port.js';
import { openPostgresEventStore } from '../../src/eventstore/postgres.js';
import { acquirePostgres } from '../../src/postgres/client.js';
import { anEvent, eventually, uniqueTenant } from '../support/events.js';
import { describePostgres } from '../support/postgres.js';
import { rejectionOf } from '../support/rejections.js';

const srcDir = fileURLToPath(new URL('../../src/', import.meta.url));

/** What readAll gives of one tenant, as `stream:version` names. */
const namesOf = (events: RecordedEvent[]) => events.map((event) => event.streamName.split('_').at(-1));

describePostgres('PostgreSQL event store', (url) => {
  let store: EventStore;
  let tenant: string;
  let side: pg.Client;
  const stream = (id: string) => `thing-${tenant}_${id}`;

  beforeEach(async () => {
    store = await openPostgresEventStore(url);
    tenant = uniqueTenant();
    side = new pg.Client(url);
    await side.connect();
  });
  afterEach(async () => {
    await side.end();
    await store.close();
  });

  /** A consumer of `group` in another process: `body` runs once `store` is open with `options`. */
  const consumerProcess = (group: string, options: string, body: string) =>
    spawn(
      process.execPath,
      [
        '--import',
        'tsx',
        '--input-type=module',
        '-e',
        `import { openPostgresEventStore } from '${srcDir}eventstore/postgres.ts';
         const store = await openPostgresEventStore(process.env.URL, ${options});
         ${body}`,
      ],
      { env: { ...process.env, URL: url, GROUP: group }, stdio: ['ignore', 'pipe', 'inherit'] },
    );

  /** Starts an append in a transaction of `side` that stays open until the returned commit. */
  const openAppend = async (id: string) => {
    const event = anEvent('Held', {}, tenant);
    await side.query('BEGIN');
    await side.query(
      `SELECT append_events($1, -1, ARRAY[$2], ARRAY['Held'], ARRAY[$3], ARRAY['{}'], ARRAY[$4], ARRAY['h'])`,
      [stream(id), event.id, tenant, JSON.stringify(event.metadata)],
    );
    return { commit: () => side.query('COMMIT') };
  };

  describe('reading in commit order', () => {
    it('holds back an event committed after a lower position still in flight, then reads both in order', async () => {
      const held = await openAppend('first');
      await store.appendToStream(stream('second'), [anEvent('Later', {}, tenant)], 'no_stream');
      // The second event is committed and visible, but the transaction before it may still add a lower position.
      const { rows } = await side.query<{ n: string }>(
        'SELECT count(*) AS n FROM events WHERE tenant_id = $1',
        [tenant],
      );
      expect(Number(rows[0]?.n)).to.equal(2); // its own, uncommitted, and the committed one
      const before = await store.readAll({ filter: { tenantId: tenant } });
      expect(before.events).to.deep.equal([]);

      const seen: RecordedEvent[] = [];
      const subscription = store.subscribe({ after: 0, filter: { tenantId: tenant } }, (events) => {
        seen.push(...events);
        return Promise.resolve();
      });
      await held.commit();
      await eventually(() => seen.length === 2);
      await subscription.stop();
      expect(namesOf(seen)).to.deep.equal(['first', 'second']);
      expect(seen[0]!.position).to.be.lessThan(seen[1]!.position);
      const after = await store.readAll({ filter: { tenantId: tenant } });
      expect(namesOf(after.events)).to.deep.equal(['first', 'second']);
    });

    it('reads an event held back by a transaction that appends nothing soon after it ends, without a wake-up', async () => {
      // A long polling interval: only the short look-again while events wait behind the horizon can deliver.
      const slow = await openPostgresEventStore(url, { pollMs: 60_000 });
      try {
        const seen: RecordedEvent[] = [];
        const subscription = slow.subscribe({ after: 0, filter: { tenantId: tenant } }, (events) => {
          seen.push(...events);
          return Promise.resolve();
        });
        await side.query('BEGIN');
        await side.query('SELECT pg_current_xact_id()'); // a transaction id, as any writer has
        await store.appendToStream(stream('a'), [anEvent('A', {}, tenant)], 'no_stream');
        // On purpose: time for a reader to deliver what it must not yet.
        await new Promise((resolve) => setTimeout(resolve, 200));
        expect(seen).to.deep.equal([]);
        await side.query('COMMIT');
        await eventually(() => seen.length === 1, 2000);
        await subscription.stop();
      } finally {
        await slow.close();
      }
    });

    it('does not give a stream version twice to appends racing from several pools', async () => {
      const others = await Promise.all(
        [1, 2, 3].map((n) => openPostgresEventStore(`${url}?application_name=racer${n}`)),
      );
      try {
        const outcomes = await Promise.allSettled(
          // Each lost race is retried, up to 5 attempts: four racers lose at most three times.
          [store, ...others].map((racer) =>
            racer.appendToStream(stream('race'), [anEvent('A', {}, tenant)], 'any'),
          ),
        );
        expect(outcomes.filter((outcome) => outcome.status === 'rejected')).to.deep.equal([]);
        const events = await store.readStream(stream('race'));
        expect(events.map((event) => event.streamVersion)).to.deep.equal([0, 1, 2, 3]);
      } finally {
        await Promise.all(others.map((other) => other.close()));
      }
    });
  });

  it('refuses an append on a head another process has moved past, and chains a retry to the real head', async () => {
    const other = await openPostgresEventStore(`${url}?application_name=mover`);
    try {
      await store.appendToStream(stream('moved'), [anEvent('A', { n: 0 }, tenant)], 'no_stream');
      await store.readStream(stream('moved')); // this process now knows the head: version 0
      await other.appendToStream(stream('moved'), [anEvent('A', { n: 1 }, tenant)], 0);
      await other.appendToStream(stream('moved'), [anEvent('A', { n: 2 }, tenant)], 1);

      const stale = await rejectionOf(store.appendToStream(stream('moved'), [anEvent('A', {}, tenant)], 0));
      expect(stale).to.be.instanceOf(VersionConflictError);
      expect((stale as VersionConflictError).actual).to.equal(2); // the stream's real version
      const retried = await store.appendToStream(stream('moved'), [anEvent('A', { n: 3 }, tenant)], 'any');
      expect(retried.nextExpectedVersion).to.equal(3);

      const events = await other.readStream(stream('moved'));
      expect(events.map((event) => event.data)).to.deep.equal([{ n: 0 }, { n: 1 }, { n: 2 }, { n: 3 }]);
      expect((await verifyTenant(store, tenant)).broken).to.equal(null);
    } finally {
      await other.close();
    }
  });
  describe('wake-ups', () => {
    /**
     * The reads of a subscriber to `Wanted` while `appendOthers` appends, then one `Wanted` is appended and
     * read: a store of its own (its own pool), woken only by notifications, whose reads are counted on that
     * pool. An empty batch reports how far it got; it reads again after each, as after any handler, since a
     * wake-up that came while the handler ran is not kept: those reads are not counted.
     */
    const readsWhile = async (name: string, appendOthers: () => Promise<void>): Promise<number> => {
      const watchedUrl = `${url}?application_name=${name}`;
      const watched = await openPostgresEventStore(watchedUrl, { pollMs: 60_000 });
      const shared = acquirePostgres(watchedUrl);
      const query = shared.pool.query.bind(shared.pool) as (...args: unknown[]) => unknown;
      let reads = 0;
      (shared.pool as unknown as { query: (...args: unknown[]) => unknown }).query = (...args) => {
        if (String(args[0]).includes('page AS')) reads += 1;
        return query(...args);
      };
      try {
        const seen: RecordedEvent[] = [];
        let reports = 0;
        const subscription = watched.subscribe(
          { after: await store.headPosition(), filter: { eventTypes: ['Wanted'], tenantId: tenant } },
          (events) => {
            if (events.length === 0) reports += 1;
            seen.push(...events);
            return Promise.resolve();
          },
        );
        await eventually(() => reads >= 1);
        const before = { reads, reports };
        await appendOthers();
        await store.appendToStream(stream('w'), [anEvent('Wanted', {}, tenant)], 'no_stream');
        await eventually(() => seen.length === 1);
        await subscription.stop();
        return reads - before.reads - (reports - before.reports);
      } finally {
        await shared.release();
        await watched.close();
      }
    };

    it('takes the commits of only other types that follow its position as read, without reading them', async () => {
      const reads = await readsWhile('watched', async () => {
        for (let n = 0; n < 20; n += 1) {
          await store.appendToStream(stream(`u${n}`), [anEvent('Unwanted', {}, tenant)], 'no_stream');
          // On purpose: each commit comes to a subscriber asleep, so none are merged into one wake-up.
          await new Promise((resolve) => setTimeout(resolve, 5));
        }
      });
      // A read or two for the commit it reads; woken by every commit, it read once more for each of the
      // twenty others (29 reads for 9 reports, measured).
      expect(reads).to.be.within(1, 5);
    });

    it('takes commits of other types that arrive out of position order as read, once the gaps fill', async () => {
      const reads = await readsWhile('watched-concurrent', async () => {
        // Eight appends in flight at once commit in their own order, not their positions': most wake-ups
        // start past a commit not heard of yet, which the next ones fill in.
        for (let round = 0; round < 10; round += 1) {
          await Promise.all(
            Array.from({ length: 8 }, (_, n) =>
              store.appendToStream(stream(`u${round}_${n}`), [anEvent('Unwanted', {}, tenant)], 'no_stream'),
            ),
          );
          await new Promise((resolve) => setTimeout(resolve, 5));
        }
      });
      // 3 reads measured; taking only a commit that starts where it stands as read, it read 13 or 14 times.
      expect(reads).to.be.within(1, 6);
    });

    it('reads within its polling interval while wake-ups it takes as read keep coming behind a gap', async function () {
      this.timeout(20_000);
      const watched = await openPostgresEventStore(url, { pollMs: 300 });
      try {
        const twice = anEvent('Unwanted', {}, tenant);
        const { lastPosition: beforeGap } = await store.appendToStream(stream('first'), [twice], 'no_stream');
        let reached = 0;
        const subscription = watched.subscribe(
          { after: beforeGap, filter: { eventTypes: ['Wanted'], tenantId: tenant } },
          (_events, lastPosition) => {
            reached = lastPosition;
            return Promise.resolve();
          },
        );
        await new Promise((resolve) => setTimeout(resolve, 400)); // on purpose: listening, read, asleep
        // An append refused for its event id takes the next position and leaves it empty: a commit never
        // heard of, right after where the subscriber stands.
        await rejectionOf(store.appendToStream(stream('again'), [twice], 'no_stream'));
        // Commits of other types every 20 ms, each a wake-up, for 2.5 s: far more often than the polling
        // interval, which must still bring a read that moves the subscriber past the gap.
        const until = Date.now() + 2500;
        for (let n = 0; Date.now() < until; n += 1) {
          await store.appendToStream(stream(`u${n}`), [anEvent('Unwanted', {}, tenant)], 'no_stream');
          await new Promise((resolve) => setTimeout(resolve, 20));
        }
        const reachedWhileWoken = reached;
        await subscription.stop();
        expect(reachedWhileWoken).to.be.above(beforeGap);
      } finally {
        await watched.close();
      }
    });
  });

  describe('notifications', () => {
    it('are not sent while no other process listens, and one that starts listening hears of appends at once', async function () {
      this.timeout(30_000);
      const alone = await openPostgresEventStore(url, { pollMs: 60_000 });
      // A session that LISTENs without announcing itself: it overhears what is sent, and counts for nothing.
      const overhearing = new pg.Client(url);
      await overhearing.connect();
      const notified: string[] = [];
      overhearing.on('notification', (message) => {
        if (message.channel === 'events_appended') notified.push(message.payload ?? '');
      });
      await overhearing.query('LISTEN events_appended');
      const later = await openPostgresEventStore(url, { pollMs: 60_000 });
      try {
        const own = alone.subscribe({ after: 0, filter: { eventTypes: ['Never'] } }, () => Promise.resolve());
        // Unsure (so notifying) for 3.5 s after it starts listening, until any other could announce itself.
        await new Promise((resolve) => setTimeout(resolve, 4000));
        notified.length = 0;
        await alone.appendToStream(stream('quiet'), [anEvent('Unwanted', {}, tenant)], 'no_stream');
        await new Promise((resolve) => setTimeout(resolve, 300));
        expect(notified, 'notifications while alone').to.deep.equal([]);

        // Another process starts listening, its polling interval a minute: only a wake-up brings it events.
        const seen: RecordedEvent[] = [];
        const watching = later.subscribe(
          { after: await later.headPosition(), filter: { eventTypes: ['Wanted'], tenantId: tenant } },
          (events) => {
            seen.push(...events);
            return Promise.resolve();
          },
        );
        await alone.appendToStream(stream('w1'), [anEvent('Wanted', {}, tenant)], 'no_stream');
        await eventually(() => seen.length === 1, 3000);
        await new Promise((resolve) => setTimeout(resolve, 50));
        await alone.appendToStream(stream('w2'), [anEvent('Wanted', {}, tenant)], 'no_stream');
        await eventually(() => seen.length === 2, 1000);
        expect(notified.length, 'notifications once another listens').to.be.above(0);
        await watching.stop();
        await own.stop();
      } finally {
        await overhearing.end();
        await later.close();
        await alone.close();
      }
    });
  });

  describe('consumer group wake-ups', () => {
    it('leaves an idle consumer asleep through commits of only types its group does not read', async () => {
      const watchedUrl = `${url}?application_name=watched-group`;
      const watched = await openPostgresEventStore(watchedUrl, { pollMs: 60_000 });
      const shared = acquirePostgres(watchedUrl);
      const query = shared.pool.query.bind(shared.pool) as (...args: unknown[]) => unknown;
      let claims = 0;
      (shared.pool as unknown as { query: (...args: unknown[]) => unknown }).query = (...args) => {
        if (String(args[0]).includes('SKIP LOCKED')) claims += 1;
        return query(...args);
      };
      const group = `idle-${tenant}`;
      try {
        await watched.ensurePersistentSubscription(group, {
          startFrom: 'end',
          maxRetryCount: 1,
          filter: { eventTypes: ['Wanted'], tenantId: tenant },
        });
        const seen: PersistentEvent[] = [];
        const consumer = watched.subscribePersistent(group, (delivery) => {
          seen.push(delivery);
          return Promise.resolve({ kind: 'ack' });
        });
        await eventually(() => claims >= 1);
        await new Promise((resolve) => setTimeout(resolve, 50)); // on purpose: asleep after its first look
        const before = claims;
        for (let n = 0; n < 20; n += 1) {
          await store.appendToStream(stream(`u${n}`), [anEvent('Unwanted', {}, tenant)], 'no_stream');
          // On purpose: each commit comes to a subscriber asleep, so none are merged into one wake-up.
          await new Promise((resolve) => setTimeout(resolve, 5));
        }
        await store.appendToStream(stream('w'), [anEvent('Wanted', {}, tenant)], 'no_stream');
        await eventually(() => seen.length === 1);
        await consumer.stop();
        // Woken by every commit it made two claims each, 40 or more; looking again while other transactions of
        // the cluster hold the horizon back costs a few.
        expect(claims - before).to.be.within(1, 15);
      } finally {
        await shared.release();
        await watched.close();
      }
    });
  });

  describe('a listening process frozen (SIGSTOP) past the time its announcements are missed', () => {
    it('is woken when it comes back, for what was committed without a notification meanwhile', async function () {
      this.timeout(60_000);
      const group = `frozen-${tenant}`;
      await store.ensurePersistentSubscription(group, {
        startFrom: 'end',
        maxRetryCount: 1,
        filter: { tenantId: tenant },
      });
      // A consumer in another process that polls once in ten minutes: only a wake-up brings it an event soon.
      const child = consumerProcess(
        group,
        '{ pollMs: 600000 }',
        `store.subscribePersistent(process.env.GROUP, ({ event }) => {
             process.stdout.write(event.type + '\\n');
             return Promise.resolve({ kind: 'ack' });
           });
           process.stdout.write('ready\\n');`,
      );
      const lines: string[] = [];
      child.stdout.on('data', (chunk: Buffer) => lines.push(...chunk.toString('utf8').split('\n')));
      const arrives = async (line: string, within: number) => {
        const since = Date.now();
        await eventually(() => lines.includes(line), within);
        return Date.now() - since;
      };
      const append = (type: string) =>
        store.appendToStream(stream(type), [anEvent(type, {}, tenant)], 'no_stream');
      try {
        await arrives('ready', 20_000);
        // Long enough for this process to hear the other announce itself (every second).
        await new Promise((resolve) => setTimeout(resolve, 2500));
        await append('Before');
        await arrives('Before', 5000);
        // Asleep, not frozen in the middle of a feed's transaction, which the server would end (a case of
        // its own: postgres-stall.test.ts).
        await new Promise((resolve) => setTimeout(resolve, 1000));
        child.kill('SIGSTOP');
        // Past the 3.5 s after which a listener not heard is taken to be gone: this commit notifies nobody.
        await new Promise((resolve) => setTimeout(resolve, 5000));
        await append('During');
        child.kill('SIGCONT');
        // Its announcement is heard as a new listener's, and answered with a wake-up: not the ten minutes.
        const during = await arrives('During', 10_000);
        await append('After');
        const after = await arrives('After', 5000);
        expect(during, 'ms from SIGCONT to the event committed while frozen').to.be.below(10_000);
        expect(after, 'ms from the next commit to its delivery').to.be.below(5000);
      } finally {
        child.kill('SIGCONT');
        child.kill('SIGKILL');
      }
    });
  });

  describe('consumer groups with several events in hand', () => {
    it('lets a slow event hold one place while the others pass it, each acknowledged as it settles', async () => {
      const group = `window-${tenant}`;
      await store.ensurePersistentSubscription(group, {
        startFrom: 'start',
        maxRetryCount: 1,
        filter: { tenantId: tenant },
      });
      await store.appendToStream(stream('slow'), [anEvent('Slow', {}, tenant)], 'no_stream');
      for (let n = 0; n < 6; n += 1) {
        await store.appendToStream(stream(`fast${n}`), [anEvent('Fast', {}, tenant)], 'no_stream');
      }
      /** The rows of the group still queued: an acknowledged event's row is gone. */
      const queued = async () =>
        Number(
          (
            await side.query<{ n: string }>(
              'SELECT count(*) AS n FROM consumer_group_events WHERE group_name = $1',
              [group],
            )
          ).rows[0]?.n,
        );
      let fast = 0;
      let slowDone = false;
      let queuedWhileSlow: number | null = null;
      const consumer = store.subscribePersistent(
        group,
        async ({ event }) => {
          if (event.type === 'Fast') {
            fast += 1;
            return { kind: 'ack' };
          }
          // Four events in hand: in batches, the three fast ones beside this one would wait for it, and the
          // other three would never come while it waits for them.
          await eventually(() => fast === 6, 10_000);
          await eventually(async () => (queuedWhileSlow = await queued()) === 1, 10_000);
          slowDone = true;
          return { kind: 'ack' };
        },
        { concurrency: 4 },
      );
      await eventually(() => slowDone, 15_000);
      await eventually(async () => (await queued()) === 0);
      await consumer.stop();
      expect(fast).to.equal(6);
      expect(queuedWhileSlow, 'queued rows while the slow event was in hand').to.equal(1);
    });
  });

  describe('a consumer group with a backlog larger than its window', () => {
    it('claims the rest as places free, without waiting for the polling interval', async function () {
      this.timeout(30_000);
      const reader = await openPostgresEventStore(url, { pollMs: 60_000 });
      const group = `backlog-${tenant}`;
      await reader.ensurePersistentSubscription(group, {
        startFrom: 'start',
        maxRetryCount: 1,
        filter: { tenantId: tenant },
      });
      for (let n = 0; n < 60; n += 1) {
        await store.appendToStream(stream(`b${n}`), [anEvent('Queued', {}, tenant)], 'no_stream');
      }
      let handled = 0;
      let started = 0;
      // The handlers settle on a common tick, as a batch of appends sharing a commit does: the window empties
      // while the consumer is busy acknowledging, not only while it sleeps.
      let release = () => {};
      let tick = new Promise<void>((resolve) => (release = resolve));
      const ticking = setInterval(() => {
        release();
        tick = new Promise<void>((resolve) => (release = resolve));
      }, 15);
      const consumer = reader.subscribePersistent(
        group,
        async () => {
          const mine = started;
          started += 1;
          await tick;
          // One settles on the tick, the others a moment later, while the consumer acknowledges the first.
          if (mine % 8 !== 0) await new Promise((resolve) => setTimeout(resolve, 3));
          handled += 1;
          return { kind: 'ack' };
        },
        { concurrency: 8 },
      );
      try {
        await eventually(() => handled === 60, 15_000);
      } finally {
        clearInterval(ticking);
        await consumer.stop();
        await reader.close();
      }
    });
  });

  describe('a consumer group whose filter holds quotes and backslashes', () => {
    it('feeds and claims its events, written into the statements as literals, and no others', async () => {
      const odd = `${tenant}'; DROP TABLE events; --\\`;
      const group = `quoted-${tenant}`;
      await store.ensurePersistentSubscription(group, {
        startFrom: 'start',
        maxRetryCount: 1,
        filter: { tenantId: odd, eventTypes: ["It's", 'Other\\'], streamPrefixes: [`thing-${odd}`] },
      });
      await store.appendToStream(`thing-${odd}_a`, [anEvent("It's", {}, odd)], 'no_stream');
      await store.appendToStream(`thing-${odd}_b`, [anEvent('Other\\', {}, odd)], 'no_stream');
      await store.appendToStream(`thing-${odd}_c`, [anEvent('Unwanted', {}, odd)], 'no_stream');
      await store.appendToStream(stream('d'), [anEvent("It's", {}, tenant)], 'no_stream');
      const seen: string[] = [];
      const consumer = store.subscribePersistent(group, ({ event }) => {
        seen.push(`${event.metadata.tenantId} ${event.type}`);
        return Promise.resolve({ kind: 'ack' });
      });
      await eventually(() => seen.length === 2);
      await new Promise((resolve) => setTimeout(resolve, 200)); // on purpose: nothing more comes
      await consumer.stop();
      expect(seen.sort()).to.deep.equal([`${odd} It's`, `${odd} Other\\`]);
    });
  });

  describe('a wake-up that comes while a subscriber reads', () => {
    /**
     * Pairs of commits by another process close together: the first wakes the subscriber, the second is
     * often announced while its read is in flight, with its snapshot taken before that commit and no sleeper
     * to hear the wake-up. Each pair's second event must come with no polling (the interval is a minute).
     */
    const closePairs = async (seen: () => number) => {
      for (let pair = 0; pair < 80; pair += 1) {
        await store.appendToStream(stream(`p${pair}a`), [anEvent('Wanted', {}, tenant)], 'no_stream');
        await new Promise((resolve) => setTimeout(resolve, pair % 4));
        await store.appendToStream(stream(`p${pair}b`), [anEvent('Wanted', {}, tenant)], 'no_stream');
        await eventually(() => seen() === 2 * (pair + 1), 5000);
      }
    };

    it('reads again rather than sleeping, in a catch-up subscription', async function () {
      this.timeout(120_000);
      const reader = await openPostgresEventStore(url, { pollMs: 60_000 });
      let seen = 0;
      const subscription = reader.subscribe(
        { after: await reader.headPosition(), filter: { tenantId: tenant, eventTypes: ['Wanted'] } },
        (events) => {
          seen += events.length;
          return Promise.resolve();
        },
      );
      try {
        await new Promise((resolve) => setTimeout(resolve, 500)); // on purpose: asleep after its first read
        await closePairs(() => seen);
      } finally {
        await subscription.stop();
        await reader.close();
      }
    });

    it('claims again rather than sleeping, in a consumer group', async function () {
      this.timeout(120_000);
      const reader = await openPostgresEventStore(url, { pollMs: 60_000 });
      const group = `pairs-${tenant}`;
      await reader.ensurePersistentSubscription(group, {
        startFrom: 'end',
        maxRetryCount: 1,
        filter: { tenantId: tenant, eventTypes: ['Wanted'] },
      });
      let seen = 0;
      const consumer = reader.subscribePersistent(group, () => {
        seen += 1;
        return Promise.resolve({ kind: 'ack' });
      });
      try {
        await new Promise((resolve) => setTimeout(resolve, 500)); // on purpose: asleep after its first look
        await closePairs(() => seen);
      } finally {
        await consumer.stop();
        await reader.close();
      }
    });
  });

  describe('consumer groups across processes', () => {
    const settings = (maxRetryCount = 2) => ({
      startFrom: 'start' as const,
      maxRetryCount,
      filter: { tenantId: tenant },
    });

    it('shares a group between consumers on two pools, each event to one of them', async () => {
      const other = await openPostgresEventStore(`${url}?application_name=competitor`);
      const group = `compete-${tenant}`;
      try {
        await store.ensurePersistentSubscription(group, settings());
        for (let n = 0; n < 20; n += 1) {
          await store.appendToStream(
            stream(`c${n}`),
            Array.from({ length: 10 }, () => anEvent('A', {}, tenant)),
            'no_stream',
          );
        }
        const byConsumer: PersistentEvent[][] = [[], []];
        // Each handler holds its events until both consumers have one (10 s at most): on a busy machine the
        // consumer that starts first could otherwise handle all 200 before the other asks.
        let bothHaveOne = () => undefined as void;
        const bothStarted = Promise.race([
          new Promise<void>((resolve) => (bothHaveOne = resolve)),
          new Promise<void>((resolve) => setTimeout(resolve, 10_000).unref()),
        ]);
        const consumers = [store, other].map((consumerStore, index) =>
          consumerStore.subscribePersistent(
            group,
            async (delivery) => {
              byConsumer[index]!.push(delivery);
              if (byConsumer.every((events) => events.length > 0)) bothHaveOne();
              await bothStarted;
              await new Promise((resolve) => setTimeout(resolve, 5));
              return { kind: 'ack' };
            },
            { concurrency: 4 },
          ),
        );
        await eventually(() => byConsumer.flat().length >= 200, 30_000);
        await Promise.all(consumers.map((consumer) => consumer.stop()));
        const ids = byConsumer.flat().map((delivery) => delivery.event.id);
        expect(new Set(ids).size).to.equal(200);
        expect(ids, 'deliveries').to.have.length(200);
        expect(byConsumer[0], 'the first consumer').not.to.be.empty;
        expect(byConsumer[1], 'the second consumer').not.to.be.empty;
        expect(await store.groupCheckpoint!(group)).to.be.at.least(
          Math.max(...byConsumer.flat().map((delivery) => delivery.event.position)),
        );
      } finally {
        await other.close();
      }
    });

    it('gives the events a consumer killed with -9 held to another once its claims run out', async () => {
      const group = `killed-${tenant}`;
      await store.ensurePersistentSubscription(group, settings());
      await store.appendToStream(
        stream('k'),
        [1, 2, 3].map((n) => anEvent('A', { n }, tenant)),
        'no_stream',
      );
      // A consumer in another process whose handler never returns: it claims and holds.
      const child = consumerProcess(
        group,
        '{ claimTtlMs: 1000 }',
        `store.subscribePersistent(process.env.GROUP, () => {
             process.stdout.write('claimed\\n');
             return new Promise(() => undefined);
           });`,
      );
      try {
        await new Promise<void>((resolve, reject) => {
          child.stdout.once('data', () => resolve());
          child.once('exit', (code) => reject(new Error(`the consumer exited (${code})`)));
        });
      } finally {
        child.kill('SIGKILL');
      }
      const seen: PersistentEvent[] = [];
      const consumer = store.subscribePersistent(group, (delivery) => {
        seen.push(delivery);
        return Promise.resolve({ kind: 'ack' });
      });
      await eventually(() => seen.length === 3, 10_000);
      await consumer.stop();
      // The two it never claimed at once; the one it held once its claim ran out.
      expect(seen.map((delivery) => (delivery.event.data as { n: number }).n).sort()).to.deep.equal([
        1, 2, 3,
      ]);
      expect(await store.listParked(group)).to.deep.equal([]);
    });
  });

  describe('a restore from a logical dump into another cluster', () => {
    it('makes restored events with transaction ids ahead of this cluster readable on the next start', async () => {
      await store.appendToStream(
        stream('restored'),
        [anEvent('A', {}, tenant), anEvent('B', {}, tenant)],
        'no_stream',
      );
      // As pg_restore leaves them when the dumped cluster had used far more transaction ids than this one.
      await side.query(`UPDATE events SET transaction_id = '4000000000000'::xid8 WHERE tenant_id = $1`, [
        tenant,
      ]);
      expect((await store.readAll({ filter: { tenantId: tenant } })).events).to.deep.equal([]);
      const restarted = await openPostgresEventStore(url);
      try {
        const { events } = await restarted.readAll({ filter: { tenantId: tenant } });
        expect(events.map((event) => event.type)).to.deep.equal(['A', 'B']);
      } finally {
        await restarted.close();
      }
    });
  });

  describe('a server that cannot be reached', () => {
    it('fails to open with a 503, not a crash', async () => {
      const error = await openPostgresEventStore('postgresql://nobody@127.0.0.1:1/none').catch(
        (e: unknown) => e,
      );
      expect(error).to.be.instanceOf(UnavailableError);
    });
  });
});
