import { expect } from 'chai';
import { randomUUID } from 'node:crypto';
import { pino } from 'pino';
import type { EventStore } from '../../src/eventstore/port.js';
import type {
  CollectionSpec,
  ListQuery,
  ParkedProjectionEvent,
  ReadModelStore,
} from '../../src/readmodels/port.js';
import type { Projection } from '../../src/readmodels/projection.js';
import { retryParked, skipParked } from '../../src/readmodels/parked-commands.js';
import { parkingStream } from '../../src/readmodels/parking.js';
import { applyBatch, projectionRunner } from '../../src/readmodels/runner.js';
import { anEvent, eventually, uniqueTenant } from '../support/events.js';

interface Place {
  id: string;
  name: string;
  rank: number | null;
  lat: number;
  lon: number;
}

/** A projection whose documents count the events applied to them, so that applying one twice shows. */
interface Tally {
  id: string;
  count: number;
  eventIds: string[];
}

export interface ReadModelFixture {
  readModels: ReadModelStore;
  eventStore: EventStore;
  close: () => Promise<void>;
}

export const readModelStoreContract = (open: () => Promise<ReadModelFixture>) => {
  let readModels: ReadModelStore;
  let eventStore: EventStore;
  let close: () => Promise<void>;
  let tenant: string;
  const suffix = randomUUID().replace(/-/g, '').slice(0, 8);
  const places: CollectionSpec = {
    name: `places_${suffix}`,
    fields: {
      name: { path: 'name', type: 'text' },
      rank: { path: 'rank', type: 'number' },
      lat: { path: 'lat', type: 'number' },
      lon: { path: 'lon', type: 'number' },
    },
    indexes: [['name'], ['rank'], ['lat', 'lon']],
  };

  beforeEach(async () => {
    ({ readModels, eventStore, close } = await open());
    tenant = uniqueTenant();
    await readModels.ensureCollection(places);
  });
  afterEach(async () => close());

  const put = async (docs: Place[], position = 1, tenantId = tenant) =>
    readModels.commit(
      `places-${suffix}`,
      docs.map((doc) => ({ collection: places.name, tenantId, id: doc.id, position, doc })),
      position,
    );
  const ids = async (query: Partial<ListQuery>) =>
    (
      await readModels.list<Place>(places.name, {
        tenantId: tenant,
        filters: [],
        sort: { field: 'name', direction: 'asc' },
        limit: 100,
        ...query,
      })
    ).map((p) => p.id);

  const seedPlaces = () =>
    put([
      { id: 'p1', name: 'Alder', rank: 3, lat: 45, lon: 7 },
      { id: 'p2', name: 'Birch', rank: 1, lat: 46, lon: 8 },
      { id: 'p3', name: 'Alpine', rank: null, lat: -10, lon: 179.5 },
      { id: 'p4', name: 'Cedar', rank: 3, lat: 60, lon: -179.5 },
    ]);

  describe('documents', () => {
    it('ensures a collection more than once', async () => {
      await readModels.ensureCollection(places);
    });

    it('stores a document with its position and reads it back', async () => {
      await put([{ id: 'p1', name: 'Alder', rank: 1, lat: 1, lon: 2 }], 7);
      expect(await readModels.get(places.name, { tenantId: tenant, id: 'p1' })).to.deep.equal({
        doc: { id: 'p1', name: 'Alder', rank: 1, lat: 1, lon: 2 },
        position: 7,
      });
      expect(await readModels.get(places.name, { tenantId: uniqueTenant(), id: 'p1' })).to.equal(null);
    });

    it('reads several documents at once, in the order asked, with null for missing and deleted ones', async () => {
      await put([
        { id: 'p1', name: 'Alder', rank: 1, lat: 1, lon: 2 },
        { id: 'p2', name: 'Birch', rank: 2, lat: 1, lon: 2 },
      ]);
      await readModels.commit(
        'x',
        [{ collection: places.name, tenantId: tenant, id: 'p2', position: 2, doc: null }],
        2,
      );
      const found = await readModels.getMany<Place>(places.name, [
        { tenantId: tenant, id: 'p3' },
        { tenantId: tenant, id: 'p1' },
        { tenantId: tenant, id: 'p2' },
        { tenantId: uniqueTenant(), id: 'p1' },
      ]);
      expect(found.map((d) => d && [d.doc.name, d.position])).to.deep.equal([null, ['Alder', 1], null, null]);
      expect(await readModels.getMany(places.name, [])).to.deep.equal([]);
    });

    it('ignores a change at or below the stored position', async () => {
      await put([{ id: 'p1', name: 'New', rank: 1, lat: 1, lon: 2 }], 7);
      await put([{ id: 'p1', name: 'Old', rank: 1, lat: 1, lon: 2 }], 5);
      await put([{ id: 'p1', name: 'Same', rank: 1, lat: 1, lon: 2 }], 7);
      expect((await readModels.get<Place>(places.name, { tenantId: tenant, id: 'p1' }))?.doc.name).to.equal(
        'New',
      );
    });

    it('deletes with null, and an older change cannot bring the document back', async () => {
      await put([{ id: 'p1', name: 'Alder', rank: 1, lat: 1, lon: 2 }], 3);
      await readModels.commit(
        'x',
        [{ collection: places.name, tenantId: tenant, id: 'p1', position: 4, doc: null }],
        4,
      );
      await put([{ id: 'p1', name: 'Zombie', rank: 1, lat: 1, lon: 2 }], 3);
      expect(await readModels.get(places.name, { tenantId: tenant, id: 'p1' })).to.equal(null);
      expect(await ids({})).to.deep.equal([]);
    });

    it('writes line breaks in strings and deletions side by side in one commit, each where it belongs', async () => {
      // PostgreSQL sends a commit's documents one per line: a line break inside one must not split it.
      await put([
        { id: 'p1', name: 'Alder', rank: 1, lat: 1, lon: 2 },
        { id: 'p4', name: 'Cedar', rank: 4, lat: 1, lon: 2 },
      ]);
      const broken = [
        { id: 'p2', name: 'two\nlines\r\nand\u2028more', rank: 2, lat: 1, lon: 2 },
        { id: 'p3', name: '\n', rank: 3, lat: 1, lon: 2 },
      ];
      const change = (id: string, doc: Place | null) => ({
        collection: places.name,
        tenantId: tenant,
        id,
        position: 2,
        doc,
      });
      await readModels.commit(
        `places-${suffix}`,
        [change('p1', null), change('p2', broken[0]!), change('p3', broken[1]!), change('p4', null)],
        2,
      );
      const found = await readModels.getMany<Place>(
        places.name,
        ['p1', 'p2', 'p3', 'p4'].map((id) => ({ tenantId: tenant, id })),
      );
      expect(found.map((stored) => stored?.doc ?? null)).to.deep.equal([null, ...broken, null]);
      expect(await ids({})).to.deep.equal(['p3', 'p2']);
    });
    it('keeps a checkpoint that only moves forward, and resets it with the collection', async () => {
      const projection = `checkpoint-${suffix}-${tenant}`;
      expect(await readModels.getCheckpoint(projection)).to.equal(0);
      await readModels.commit(projection, [], 10);
      await readModels.commit(projection, [], 4);
      expect(await readModels.getCheckpoint(projection)).to.equal(10);
      await readModels.reset(projection, places.name);
      expect(await readModels.getCheckpoint(projection)).to.equal(0);
    });
  });

  describe('list queries', () => {
    beforeEach(seedPlaces);

    it('only ever returns the tenant’s own documents', async () => {
      await put([{ id: 'other', name: 'Aaa', rank: 1, lat: 45, lon: 7 }], 1, uniqueTenant());
      expect(await ids({})).to.deep.equal(['p1', 'p3', 'p2', 'p4']);
    });

    it('filters by equality, set membership, range and prefix', async () => {
      expect(await ids({ filters: [{ op: 'eq', field: 'rank', value: 3 }] })).to.deep.equal(['p1', 'p4']);
      expect(await ids({ filters: [{ op: 'in', field: 'name', values: ['Birch', 'Cedar'] }] })).to.deep.equal(
        ['p2', 'p4'],
      );
      expect(
        await ids({
          filters: [
            { op: 'gte', field: 'lat', value: 45 },
            { op: 'lt', field: 'lat', value: 60 },
          ],
        }),
      ).to.deep.equal(['p1', 'p2']);
      expect(await ids({ filters: [{ op: 'prefix', field: 'name', value: 'Al' }] })).to.deep.equal([
        'p1',
        'p3',
      ]);
      expect(await ids({ filters: [{ op: 'prefix', field: 'name', value: '.*' }] })).to.deep.equal([]);
    });

    it('filters by bounding box, also across the antimeridian', async () => {
      const box = { minLon: 6, minLat: 44, maxLon: 9, maxLat: 47 };
      expect(await ids({ filters: [{ op: 'bbox', latField: 'lat', lonField: 'lon', box }] })).to.deep.equal([
        'p1',
        'p2',
      ]);
      const across = { minLon: 179, minLat: -20, maxLon: -179, maxLat: 70 };
      expect(
        await ids({ filters: [{ op: 'bbox', latField: 'lat', lonField: 'lon', box: across }] }),
      ).to.deep.equal(['p3', 'p4']);
    });

    it('sorts both ways with the id as tie-breaker and missing values lowest', async () => {
      expect(await ids({ sort: { field: 'rank', direction: 'asc' } })).to.deep.equal([
        'p3',
        'p2',
        'p1',
        'p4',
      ]);
      expect(await ids({ sort: { field: 'rank', direction: 'desc' } })).to.deep.equal([
        'p4',
        'p1',
        'p2',
        'p3',
      ]);
    });

    // Pages of 2 and 3 cross from documents with a sort value into those without one (null) within a page.
    for (const direction of ['asc', 'desc'] as const) {
      for (const limit of [1, 2, 3]) {
        it(`pages of ${limit} with keyset cursors in ${direction} order without gaps or repeats`, async () => {
          const all = await ids({ sort: { field: 'rank', direction } });
          const seen: string[] = [];
          let after: ListQuery['after'];
          for (;;) {
            const page = await readModels.list<Place>(places.name, {
              tenantId: tenant,
              filters: [],
              sort: { field: 'rank', direction },
              limit,
              ...(after ? { after } : {}),
            });
            seen.push(...page.map((place) => place.id));
            const last = page.at(-1);
            if (!last || page.length < limit) break;
            after = { value: last.rank, id: last.id };
          }
          expect(seen).to.deep.equal(all);
        });
      }
    }
  });

  describe('a field declared after the collection was made', () => {
    it('is filtered and sorted on, by its index, in documents written before and after', async () => {
      const spec: CollectionSpec = {
        name: `grown_${suffix}`,
        fields: { name: { path: 'name', type: 'text' } },
        indexes: [['name']],
      };
      await readModels.ensureCollection(spec);
      const doc = (id: string, kind: string) => ({ id, name: id, kind });
      await readModels.commit(
        `grown-${suffix}`,
        [{ collection: spec.name, tenantId: tenant, id: 'a', position: 1, doc: doc('a', 'well') }],
        1,
      );
      const grown: CollectionSpec = {
        ...spec,
        fields: { ...spec.fields, kind: { path: 'kind', type: 'text' } },
        indexes: [...spec.indexes, ['kind', 'name']],
      };
      await readModels.ensureCollection(grown);
      await readModels.ensureCollection(grown);
      await readModels.commit(
        `grown-${suffix}`,
        [
          { collection: spec.name, tenantId: tenant, id: 'b', position: 2, doc: doc('b', 'spring') },
          { collection: spec.name, tenantId: tenant, id: 'c', position: 3, doc: doc('c', 'well') },
        ],
        3,
      );
      const wells = await readModels.list<{ id: string }>(spec.name, {
        tenantId: tenant,
        filters: [{ op: 'eq', field: 'kind', value: 'well' }],
        sort: { field: 'name', direction: 'desc' },
        limit: 10,
      });
      expect(wells.map((found) => found.id)).to.deep.equal(['c', 'a']);
    });
  });

  describe('blue/green collections', () => {
    // Per test: on a shared MongoDB database, checkpoints outlive the test that moved them.
    let live: string;
    beforeEach(() => (live = `live-${suffix}-${tenant}`));
    const build = (n: number) => `${places.name}__g${n}`;
    const buildProjection = (n: number) => `build-${suffix}-${tenant}-${n}`;
    const putInto = async (collection: string, projection: string, docs: Place[], position: number) =>
      readModels.commit(
        projection,
        docs.map((doc) => ({ collection, tenantId: tenant, id: doc.id, position, doc })),
        position,
      );
    const swap = (n: number, extra: { tenantId?: string } = {}) =>
      readModels.swap({
        collection: places.name,
        projection: live,
        source: build(n),
        sourceProjection: buildProjection(n),
        ...extra,
      });
    const alder = { id: 'p1', name: 'Alder', rank: 1, lat: 1, lon: 2 };
    const birch = { id: 'p2', name: 'Birch', rank: 2, lat: 1, lon: 2 };

    it('keeps a collection ensured under a physical name apart until it is swapped in', async () => {
      await putInto(places.name, live, [alder], 3);
      await readModels.ensureCollection(places, build(1));
      await putInto(build(1), buildProjection(1), [{ ...alder, name: 'Alder (rebuilt)' }, birch], 5);
      expect(await ids({})).to.deep.equal(['p1']);
      expect(await readModels.getCheckpoint(live)).to.equal(3);

      expect(await swap(1)).to.equal(true);
      expect(await ids({})).to.deep.equal(['p1', 'p2']);
      expect((await readModels.get<Place>(places.name, { tenantId: tenant, id: 'p1' }))?.doc.name).to.equal(
        'Alder (rebuilt)',
      );
      // The live checkpoint is the build's; the build's own is gone.
      expect(await readModels.getCheckpoint(live)).to.equal(5);
      expect(await readModels.getCheckpoint(buildProjection(1))).to.equal(0);
      // Writers that address the logical name write the swapped-in collection.
      await putInto(places.name, live, [{ ...birch, name: 'Birch (live)' }], 6);
      expect((await readModels.get<Place>(places.name, { tenantId: tenant, id: 'p2' }))?.doc.name).to.equal(
        'Birch (live)',
      );
      // And a second rebuild swaps in over the first.
      await readModels.ensureCollection(places, build(2));
      await putInto(build(2), buildProjection(2), [alder], 7);
      expect(await swap(2)).to.equal(true);
      expect(await ids({})).to.deep.equal(['p1']);
    });

    it('refuses a swap while the live checkpoint is past the build’s, and changes nothing', async () => {
      await putInto(places.name, live, [alder], 10);
      await readModels.ensureCollection(places, build(3));
      await putInto(build(3), buildProjection(3), [birch], 8);
      expect(await swap(3)).to.equal(false);
      expect(await ids({})).to.deep.equal(['p1']);
      expect(await readModels.getCheckpoint(live)).to.equal(10);
      await putInto(build(3), buildProjection(3), [alder], 12);
      expect(await swap(3)).to.equal(true);
      expect(await ids({})).to.deep.equal(['p1', 'p2']);
      expect(await readModels.getCheckpoint(live)).to.equal(12);
    });

    it('swaps one tenant’s documents only, leaving the others and the live checkpoint', async () => {
      const other = uniqueTenant();
      await putInto(places.name, live, [alder, birch], 4);
      await readModels.commit(
        live,
        [{ collection: places.name, tenantId: other, id: 'q1', position: 4, doc: { ...alder, id: 'q1' } }],
        4,
      );
      await readModels.ensureCollection(places, build(4));
      await putInto(build(4), buildProjection(4), [{ ...alder, name: 'Alder (rebuilt)' }], 6);
      expect(await swap(4, { tenantId: tenant })).to.equal(true);
      // Birch was not rebuilt: it is gone. The other tenant's document stays.
      expect(await ids({})).to.deep.equal(['p1']);
      expect((await readModels.get<Place>(places.name, { tenantId: tenant, id: 'p1' }))?.doc.name).to.equal(
        'Alder (rebuilt)',
      );
      expect(await readModels.get(places.name, { tenantId: other, id: 'q1' })).to.not.equal(null);
      expect(await readModels.getCheckpoint(live)).to.equal(4);
    });

    it('builds without indexes, adds them later, and drops a build that is not swapped in', async () => {
      await readModels.ensureCollection(places, build(5), { indexes: false });
      await putInto(build(5), buildProjection(5), [alder, birch], 2);
      await readModels.ensureCollection(places, build(5));
      const listed = await readModels.list<Place>(build(5), {
        tenantId: tenant,
        filters: [{ op: 'eq', field: 'rank', value: 2 }],
        sort: { field: 'name', direction: 'asc' },
        limit: 10,
      });
      expect(listed.map((p) => p.id)).to.deep.equal(['p2']);
      await readModels.dropCollection(build(5));
      await readModels.dropCollection(build(5));
      await readModels.ensureCollection(places, build(5));
      expect(await readModels.get(build(5), { tenantId: tenant, id: 'p1' })).to.equal(null);
    });

    it('keeps the last error of a projection until it is cleared', async () => {
      const projection = `errors-${suffix}-${tenant}`;
      expect(await readModels.getProjectionState(projection)).to.deep.equal({
        checkpoint: 0,
        lastError: null,
      });
      await readModels.commit(projection, [], 7);
      await readModels.recordError(projection, 'boom');
      const failed = await readModels.getProjectionState(projection);
      expect(failed.checkpoint).to.equal(7);
      expect(failed.lastError?.message).to.equal('boom');
      expect(Date.parse(failed.lastError?.at ?? '')).to.be.closeTo(Date.now(), 60_000);
      await readModels.recordError(projection, null);
      expect(await readModels.getProjectionState(projection)).to.deep.equal({
        checkpoint: 7,
        lastError: null,
      });
    });
  });

  describe('parked events', () => {
    const parked = (projection: string, position: number, tenantId = tenant): ParkedProjectionEvent => ({
      projection,
      position,
      tenantId,
      eventId: randomUUID(),
      eventType: 'Tallied',
      error: `failed at ${position}`,
      parkedAt: new Date().toISOString(),
    });

    it('keeps parked events per projection in position order, and lists them all', async () => {
      const first = `parked_a_${suffix}_${tenant}`;
      const second = `parked_b_${suffix}_${tenant}`;
      await readModels.parkEvent(parked(first, 9));
      await readModels.parkEvent(parked(first, 3));
      await readModels.parkEvent(parked(second, 5));
      expect((await readModels.listParked(first)).map((p) => p.position)).to.deep.equal([3, 9]);
      expect(await readModels.listParked(second)).to.have.length(1);
      const all = (await readModels.listParked()).filter((p) => p.tenantId === tenant);
      expect(all.map((p) => [p.projection, p.position])).to.deep.equal([
        [first, 3],
        [first, 9],
        [second, 5],
      ]);
      expect(await readModels.listParked(`parked_none_${suffix}`)).to.deep.equal([]);
    });

    it('keeps every field, and parking the same event again takes the new error and time', async () => {
      const projection = `parked_c_${suffix}_${tenant}`;
      const original = parked(projection, 4);
      await readModels.parkEvent(original);
      expect(await readModels.listParked(projection)).to.deep.equal([original]);
      const again = {
        ...original,
        error: 'failed again',
        parkedAt: new Date(Date.now() + 1000).toISOString(),
      };
      await readModels.parkEvent(again);
      expect(await readModels.listParked(projection)).to.deep.equal([again]);
    });

    it('unparks one event, and says whether it was parked', async () => {
      const projection = `parked_d_${suffix}_${tenant}`;
      await readModels.parkEvent(parked(projection, 1));
      await readModels.parkEvent(parked(projection, 2));
      expect(await readModels.unpark(projection, 1)).to.equal(true);
      expect(await readModels.unpark(projection, 1)).to.equal(false);
      expect(await readModels.unpark(`parked_e_${suffix}`, 2)).to.equal(false);
      expect((await readModels.listParked(projection)).map((p) => p.position)).to.deep.equal([2]);
    });
  });

  describe('projections over these stores', () => {
    const tallies = (): Projection<Tally> => ({
      name: `tallies-${suffix}-${tenant}`,
      collection: { name: `tallies_${suffix}`, fields: {}, indexes: [] },
      eventTypes: ['Tallied'],
      documentKey: (event) => ({
        tenantId: event.metadata.tenantId,
        id: (event.data as { key: string }).key,
      }),
      evolve: (doc, event) => ({
        id: (event.data as { key: string }).key,
        count: (doc?.count ?? 0) + 1,
        eventIds: [...(doc?.eventIds ?? []), event.id],
      }),
    });
    const logger = pino({ level: 'silent' });

    const seedEvents = async () => {
      for (const key of ['a', 'b', 'c']) {
        const events = [1, 2, 3].map((n) => anEvent('Tallied', { key, n }, tenant));
        await eventStore.appendToStream(`tally-${tenant}_${key}`, events, 'no_stream');
      }
      return (await eventStore.readAll({ filter: { tenantId: tenant } })).events;
    };
    const snapshot = async (projection: Projection<Tally>) =>
      Promise.all(
        ['a', 'b', 'c'].map((id) => readModels.get(projection.collection.name, { tenantId: tenant, id })),
      );
    const catchUp = async (projection: Projection<Tally>) => {
      const runner = projectionRunner(projection, { eventStore, readModels, logger, batchSize: 2 });
      await runner.start();
      expect(await runner.waitFor(await eventStore.headPosition(), 5000)).to.equal(true);
      await runner.stop();
    };
    const cleanRebuild = async (projection: Projection<Tally>) => {
      await readModels.reset(projection.name, projection.collection.name);
      await catchUp(projection);
      return snapshot(projection);
    };

    /**
     * The store under test, with commits and pings failing while `down.now` is set: a store that does not
     * answer, as an unreachable server or a full disk is to the runner.
     */
    const unreachableWhile = (down: { now: boolean }): ReadModelStore => {
      const refuse = () => Promise.reject(new Error('store unreachable'));
      return {
        ...readModels,
        commit: (...args) => (down.now ? refuse() : readModels.commit(...args)),
        ping: () => (down.now ? refuse() : readModels.ping()),
      };
    };

    it('keeps a failing store’s error without parking anything, and resumes from its checkpoint', async () => {
      const projection = tallies();
      await seedEvents();
      const down = { now: true };
      const runner = projectionRunner(projection, {
        eventStore,
        readModels: unreachableWhile(down),
        logger,
        batchSize: 2,
        backOff: { initialMs: 20, maxMs: 50, resetAfterMs: 10_000 },
      });
      await runner.start();
      try {
        await eventually(
          async () => (await readModels.getProjectionState(projection.name)).lastError !== null,
        );
        expect((await readModels.getProjectionState(projection.name)).lastError?.message).to.equal(
          'store unreachable',
        );
        expect(runner.status()).to.include({ lastError: 'store unreachable', checkpoint: 0, parked: 0 });
        await eventually(() => runner.status().restarts >= 2);
        down.now = false;
        expect(await runner.waitFor(await eventStore.headPosition(), 5000)).to.equal(true);
        await eventually(
          async () => (await readModels.getProjectionState(projection.name)).lastError === null,
        );
        expect(runner.status()).to.include({ state: 'running', lastError: null, parked: 0 });
        expect(await readModels.listParked(projection.name)).to.deep.equal([]);
        expect((await snapshot(projection)).map((d) => (d?.doc as Tally).count)).to.deep.equal([3, 3, 3]);
      } finally {
        await runner.stop();
      }
      expect(runner.status().state).to.equal('stopped');
    });

    /**
     * Tallies that fail on the last event of `b`: the fold throws, or makes a document nested 1,000 deep.
     * (The last: a batch writes each document's last state only.)
     */
    const fragile = (failure: 'throws' | 'too deep'): Projection<Tally & { nested?: unknown }> => {
      const base = tallies();
      return {
        ...base,
        name: `fragile_${suffix}_${tenant}`,
        collection: {
          name: `fragile_${suffix}`,
          // A declared field: SQLite reads the JSON of every document written, as MongoDB stores its BSON.
          fields: { count: { path: 'count', type: 'number' } },
          indexes: [['count']],
        },
        evolve: (doc, event) => {
          const next = base.evolve(doc, event)!;
          const { key, n } = event.data as { key: string; n: number };
          if (key !== 'b' || n !== 3) return next;
          if (failure === 'throws') throw new Error('cannot fold b3');
          let nested: unknown = {};
          for (let depth = 0; depth < 1000; depth += 1) nested = { nested };
          // Before the declared field, which SQLite then reads past it.
          return { nested, ...next };
        },
      };
    };

    for (const failure of ['throws', 'too deep'] as const) {
      it(`parks an event whose document ${failure === 'throws' ? 'the fold cannot make' : 'the store refuses'}, records it, and goes on`, async () => {
        const projection = fragile(failure);
        const events = await seedEvents();
        const poison = events.find(
          (e) => (e.data as { key: string; n: number }).key === 'b' && (e.data as { n: number }).n === 3,
        )!;
        const runner = projectionRunner(projection, { eventStore, readModels, logger, batchSize: 4 });
        await runner.start();
        try {
          expect(await runner.waitFor(await eventStore.headPosition(), 5000)).to.equal(true);
          await eventually(() => runner.status().parked === 1);
          expect(runner.status()).to.include({ state: 'running', lastError: null });
        } finally {
          await runner.stop();
        }
        const counts = await Promise.all(
          ['a', 'b', 'c'].map(
            async (id) =>
              (await readModels.get<Tally>(projection.collection.name, { tenantId: tenant, id }))?.doc.count,
          ),
        );
        expect(counts).to.deep.equal([3, 2, 3]);
        const [parked, ...others] = await readModels.listParked(projection.name);
        expect(others).to.deep.equal([]);
        expect(parked).to.include({
          projection: projection.name,
          position: poison.position,
          tenantId: tenant,
          eventId: poison.id,
          eventType: 'Tallied',
        });
        if (failure === 'throws') expect(parked?.error).to.equal('cannot fold b3');
        expect(Date.parse(parked?.parkedAt ?? '')).to.be.closeTo(Date.now(), 60_000);
        const decisions = await eventStore.readStream(parkingStream(tenant, projection.name));
        expect(decisions.map((e) => e.type)).to.deep.equal(['ProjectionEventParked']);
        expect(decisions[0]?.data).to.deep.equal({
          projection: projection.name,
          position: poison.position,
          eventId: poison.id,
          eventType: 'Tallied',
          error: parked?.error,
        });
        expect(decisions[0]?.metadata).to.include({
          tenantId: tenant,
          actor: 'system:projections',
          causationId: poison.id,
        });
      });
    }

    it('parks nothing on a full disk, though the store still answers reads and pings', async () => {
      const projection = tallies();
      await seedEvents();
      const full = { now: true };
      const runner = projectionRunner(projection, {
        eventStore,
        readModels: {
          ...readModels,
          commit: (...args) =>
            full.now
              ? Promise.reject(Object.assign(new Error('database or disk is full'), { code: 'SQLITE_FULL' }))
              : readModels.commit(...args),
        },
        logger,
        backOff: { initialMs: 20, maxMs: 50, resetAfterMs: 10_000 },
      });
      await runner.start();
      try {
        await eventually(() => runner.status().restarts >= 2);
        expect(runner.status()).to.include({ lastError: 'database or disk is full', parked: 0 });
        full.now = false;
        expect(await runner.waitFor(await eventStore.headPosition(), 5000)).to.equal(true);
      } finally {
        await runner.stop();
      }
      expect(await readModels.listParked(projection.name)).to.deep.equal([]);
      expect((await snapshot(projection)).map((d) => (d?.doc as Tally).count)).to.deep.equal([3, 3, 3]);
    });

    it('applies a parked event once its cause is fixed, keeps one that fails again, and skips on purpose', async () => {
      let fixed = false;
      const broken = fragile('throws');
      const projection: typeof broken = {
        ...broken,
        evolve: (doc, event) => (fixed ? tallies().evolve(doc, event) : broken.evolve(doc, event)),
      };
      await seedEvents();
      const runner = projectionRunner(projection, { eventStore, readModels, logger });
      await runner.start();
      expect(await runner.waitFor(await eventStore.headPosition(), 5000)).to.equal(true);
      await runner.stop();
      const [parked] = await readModels.listParked(projection.name);
      const deps = { eventStore, readModels };

      expect(await retryParked(projection, deps, parked!)).to.deep.equal({
        position: parked!.position,
        outcome: 'parked',
        error: 'cannot fold b3',
      });
      fixed = true;
      expect(await retryParked(projection, deps, parked!)).to.deep.equal({
        position: parked!.position,
        outcome: 'applied',
      });
      expect(await readModels.listParked(projection.name)).to.deep.equal([]);
      const b = await readModels.get<Tally>(projection.collection.name, { tenantId: tenant, id: 'b' });
      expect(b).to.deep.include({ position: parked!.position });
      expect(b?.doc.count).to.equal(3);

      await readModels.parkEvent(parked!);
      await skipParked(deps, parked!);
      expect(await readModels.listParked(projection.name)).to.deep.equal([]);
      const decisions = await eventStore.readStream(parkingStream(tenant, projection.name));
      expect(decisions.map((e) => [e.type, e.metadata.actor])).to.deep.equal([
        ['ProjectionEventParked', 'system:projections'],
        ['ProjectionEventParked', 'cli'],
        ['ProjectionEventRetried', 'cli'],
        ['ProjectionEventSkipped', 'cli'],
      ]);
    });

    it('leaves the read model as a clean rebuild would after a duplicate delivery', async () => {
      const projection = tallies();
      await readModels.ensureCollection(projection.collection);
      const events = await seedEvents();
      const changes = await applyBatch(projection, readModels, events);
      await readModels.commit(projection.name, changes, events.at(-1)!.position);
      // The same batch arrives again, as after a lost acknowledgement.
      await readModels.commit(
        projection.name,
        await applyBatch(projection, readModels, events),
        events.at(-1)!.position,
      );
      const afterDuplicate = await snapshot(projection);
      expect(afterDuplicate.map((d) => (d?.doc as Tally).count)).to.deep.equal([3, 3, 3]);
      expect(afterDuplicate).to.deep.equal(await cleanRebuild(projection));
    });

    it('leaves the read model as a clean rebuild would after a crash between the writes and the checkpoint', async () => {
      const projection = tallies();
      await readModels.ensureCollection(projection.collection);
      const events = await seedEvents();
      // Documents written for the first six events, then the process dies before the checkpoint moves.
      const firstPart = events.slice(0, 6);
      await readModels.commit(projection.name, await applyBatch(projection, readModels, firstPart), 0);
      expect(await readModels.getCheckpoint(projection.name)).to.equal(0);
      // On restart the runner replays from the old checkpoint; documents already ahead skip those events.
      await catchUp(projection);
      const afterCrash = await snapshot(projection);
      expect(afterCrash.map((d) => (d?.doc as Tally).eventIds)).to.deep.equal(
        ['a', 'b', 'c'].map((key) =>
          events.filter((e) => (e.data as { key: string }).key === key).map((e) => e.id),
        ),
      );
      expect(afterCrash).to.deep.equal(await cleanRebuild(projection));
    });
  });
};
