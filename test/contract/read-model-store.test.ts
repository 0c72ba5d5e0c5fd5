import { expect } from 'chai';
import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import pg from 'pg';
import { openSqliteEventStore } from '../../src/eventstore/sqlite.js';
import { openMongoReadModels } from '../../src/readmodels/mongo.js';
import { openPostgresReadModels } from '../../src/readmodels/postgres.js';
import {
  CollectionSwappedError,
  type CollectionSpec,
  type ReadModelStore,
} from '../../src/readmodels/port.js';
import { openSqliteReadModels } from '../../src/readmodels/sqlite.js';
import { describeBackend, tempDir } from '../support/adapters.js';
import { describePostgres } from '../support/postgres.js';
import { readModelStoreContract } from './read-model-store.contract.js';
import { uniqueTenant } from '../support/events.js';

/** The read-model store under test, beside an embedded event store for the projection tests. */
const fixture = async (openReadModels: (dir: string) => Promise<ReadModelStore>) => {
  const { dir, remove } = tempDir();
  const eventStore = openSqliteEventStore(join(dir, 'events.db'));
  const readModels = await openReadModels(dir);
  return {
    eventStore,
    readModels,
    close: async () => {
      await readModels.close();
      await eventStore.close();
      remove();
    },
  };
};

describe('ReadModelStore contract', () => {
  describe('on the embedded SQLite adapter', () => {
    readModelStoreContract(() =>
      fixture((dir) => Promise.resolve(openSqliteReadModels(join(dir, 'readmodels.db')))),
    );
    groupCommits();
  });

  describePostgres('on PostgreSQL', (url) => {
    readModelStoreContract(() => fixture(() => openPostgresReadModels(url)));
    postgresTables(url);
  });

  describeBackend('on MongoDB', 'MONGODB_URL', (url) => {
    readModelStoreContract(() => fixture(() => openMongoReadModels(url)));
  });
});

/** What the PostgreSQL adapter does with its tables, beyond the port: indexes, new fields, swaps elsewhere. */
function postgresTables(url: string) {
  describe('its tables', () => {
    let admin: pg.Pool;
    let stores: ReadModelStore[];
    const open = async () => {
      const store = await openPostgresReadModels(url);
      stores.push(store);
      return store;
    };
    beforeEach(() => {
      admin = new pg.Pool({ connectionString: url, max: 2 });
      stores = [];
    });
    afterEach(async () => {
      await Promise.all(stores.map((store) => store.close()));
      await admin.end();
    });

    const aSpec = (): CollectionSpec => ({
      name: `spots_${randomUUID().replace(/-/g, '').slice(0, 8)}`,
      fields: {
        name: { path: 'name', type: 'text' },
        lat: { path: 'position.lat', type: 'number' },
        lon: { path: 'position.lon', type: 'number' },
      },
      indexes: [['name'], ['lat', 'lon']],
    });
    const indexesOf = async (table: string) =>
      (
        await admin.query<{ indexname: string; indexdef: string }>(
          'SELECT indexname, indexdef FROM pg_indexes WHERE tablename = $1 ORDER BY indexname',
          [table],
        )
      ).rows;

    it('indexes a list field with a B-tree, missing values first, and the bounding box with a GiST', async () => {
      const spec = aSpec();
      const store = await open();
      await store.ensureCollection(spec);
      const definitions = (await indexesOf(`rm_${spec.name}`)).map((index) => index.indexdef);
      expect(definitions).to.have.length(3);
      expect(definitions.some((d) => /USING btree \(tenant_id, f_name NULLS FIRST, id\)/.test(d))).to.equal(
        true,
      );
      expect(definitions.some((d) => /USING gist \(tenant_id, point\(f_lon, f_lat\)\)/.test(d))).to.equal(
        true,
      );
    });

    it('adds the column of a field declared later to the existing table, and its index', async () => {
      const spec = aSpec();
      const store = await open();
      await store.ensureCollection(spec);
      const tenantId = uniqueTenant();
      await store.commit(
        `spots-${spec.name}`,
        [{ collection: spec.name, tenantId, id: 's1', position: 1, doc: { name: 'A', kind: 'well' } }],
        1,
      );
      const grown: CollectionSpec = {
        ...spec,
        fields: { ...spec.fields, kind: { path: 'kind', type: 'text' } },
        indexes: [...spec.indexes, ['kind']],
      };
      await (await open()).ensureCollection(grown);
      const again = await open();
      await again.ensureCollection(grown);
      const found = await again.list<{ name: string }>(spec.name, {
        tenantId,
        filters: [{ op: 'eq', field: 'kind', value: 'well' }],
        sort: { field: 'kind', direction: 'asc' },
        limit: 10,
      });
      expect(found.map((doc) => doc.name)).to.deep.equal(['A']);
      expect(await indexesOf(`rm_${spec.name}`)).to.have.length(4);
    });

    it('adds the indexes a table with rows was built without, and builds again one left invalid', async () => {
      const spec = aSpec();
      const store = await open();
      await store.ensureCollection(spec, undefined, { indexes: false });
      expect(await indexesOf(`rm_${spec.name}`)).to.have.length(1);
      await store.commit(
        `spots-${spec.name}`,
        [{ collection: spec.name, tenantId: uniqueTenant(), id: 's1', position: 1, doc: { name: 'A' } }],
        1,
      );
      await store.ensureCollection(spec);
      const [built] = (await indexesOf(`rm_${spec.name}`)).filter(
        (index) => !index.indexname.endsWith('_pkey'),
      );
      // As an interrupted CREATE INDEX CONCURRENTLY leaves it.
      await admin.query(
        `UPDATE pg_index SET indisvalid = false WHERE indexrelid = to_regclass(quote_ident($1))`,
        [built!.indexname],
      );
      await (await open()).ensureCollection(spec);
      const { rows } = await admin.query<{ valid: boolean }>(
        `SELECT x.indisvalid AS valid FROM pg_index x WHERE x.indrelid = to_regclass(quote_ident($1))`,
        [`rm_${spec.name}`],
      );
      expect(rows.map((row) => row.valid)).to.deep.equal([true, true, true]);
    });

    it('keeps collections whose names outgrow PostgreSQL’s identifiers apart, as snapshots’ may', async () => {
      const spec = aSpec();
      const store = await open();
      const long = (n: number) => `snapshot_${'s'.repeat(60)}${n}${spec.name.slice(-8)}`;
      const tenantId = uniqueTenant();
      for (const n of [1, 2]) {
        await store.ensureCollection(spec, long(n));
        await store.commit(
          `snapshot-${spec.name}-${n}`,
          [{ collection: long(n), tenantId, id: 's1', position: n, doc: { name: `from ${n}` } }],
          n,
        );
      }
      for (const n of [1, 2]) {
        const [found] = await store.list<{ name: string }>(long(n), {
          tenantId,
          filters: [{ op: 'prefix', field: 'name', value: 'from' }],
          sort: { field: 'name', direction: 'asc' },
          limit: 10,
        });
        expect(found?.name).to.equal(`from ${n}`);
        await store.dropCollection(long(n));
      }
    });

    it('keeps strings holding U+0000, which jsonb refuses, and the escape character exactly', async () => {
      const spec = aSpec();
      const store = await open();
      await store.ensureCollection(spec);
      const tenantId = uniqueTenant();
      const odd = {
        id: 's1',
        name: 'a\u0000b',
        notes: ['\uE000', '\uE000e', '\uE0000', '\\u0000', '\u0000\uE000\u0000'],
        attributes: { 'key\u0000': { '\uE000': 'x' } },
      };
      const plain = { id: 's2', name: 'plain' };
      // Its JSON text holds \u0000 too, as an escaped backslash: escaped, and read back as it was.
      const backslash = { id: 's3', name: 'quoted', notes: ['\\u0000 is six characters'] };
      await store.commit(
        `nul-${spec.name}`,
        [odd, plain, backslash].map((doc, n) => ({
          collection: spec.name,
          tenantId,
          id: doc.id,
          position: n + 1,
          doc,
        })),
        3,
      );
      expect((await store.get(spec.name, { tenantId, id: 's1' }))?.doc).to.deep.equal(odd);
      expect((await store.getMany(spec.name, [{ tenantId, id: 's1' }]))[0]?.doc).to.deep.equal(odd);
      const query = { tenantId, filters: [], sort: { field: 'name', direction: 'asc' as const }, limit: 10 };
      expect(await store.list(spec.name, query)).to.deep.equal([odd, plain, backslash]);
      expect(
        (await store.listJson(spec.name, query)).map((row) => JSON.parse(row.json) as unknown),
      ).to.deep.equal([odd, plain, backslash]);
      const { rows } = await admin.query<{ id: string; escaped: boolean }>(
        `SELECT id, escaped FROM "rm_${spec.name}" ORDER BY id`,
      );
      expect(rows).to.deep.equal([
        { id: 's1', escaped: true },
        { id: 's2', escaped: false },
        { id: 's3', escaped: true },
      ]);
    });

    it('writes each document of a batch to its own row, deletions among them, in a build as in a live table', async () => {
      const spec = aSpec();
      const store = await open();
      const build = `${spec.name}__b1`;
      await store.ensureCollection(spec);
      await store.ensureCollection(spec, build, { indexes: false });
      const tenantId = uniqueTenant();
      const doc = (id: string, name: string) => ({ id, name, position: { lat: 1, lon: 2 } });
      for (const [projection, collection] of [
        [`live-${spec.name}`, spec.name],
        [`build:${build}`, build],
      ] as const) {
        const change = (id: string, position: number, value: unknown) => ({
          collection,
          tenantId,
          id,
          position,
          doc: value,
        });
        await store.commit(
          projection,
          [change('s1', 1, doc('s1', 'one')), change('s2', 2, doc('s2', 'two'))],
          2,
        );
        // One batch: a deletion between a new document and a changed one.
        await store.commit(
          projection,
          [change('s3', 3, doc('s3', 'three')), change('s1', 4, null), change('s2', 5, doc('s2', 'deux'))],
          5,
        );
        expect(await store.getCheckpoint(projection)).to.equal(5);
        const found = await store.getMany<{ name: string }>(collection, [
          { tenantId, id: 's1' },
          { tenantId, id: 's2' },
          { tenantId, id: 's3' },
        ]);
        expect(found.map((stored) => stored && [stored.doc.name, stored.position])).to.deep.equal([
          null,
          ['deux', 5],
          ['three', 3],
        ]);
        const { rows } = await admin.query<{
          id: string;
          position: string;
          deleted: boolean;
          f_name: string;
        }>(`SELECT id, position, doc IS NULL AS deleted, f_name FROM "rm_${collection}" ORDER BY id`);
        expect(rows).to.deep.equal([
          { id: 's1', position: '4', deleted: true, f_name: null },
          { id: 's2', position: '5', deleted: false, f_name: 'deux' },
          { id: 's3', position: '3', deleted: false, f_name: 'three' },
        ]);
      }
    });

    it('lets several processes ensure the same collection at once', async () => {
      const spec = aSpec();
      const opened = await Promise.all([1, 2, 3, 4].map(() => open()));
      await Promise.all(opened.map((store) => store.ensureCollection(spec)));
      expect(await indexesOf(`rm_${spec.name}`)).to.have.length(3);
    });

    it('gives a swapped-in table the live names of its indexes, so that a build of the same name can follow', async () => {
      const spec = aSpec();
      const store = await open();
      await store.ensureCollection(spec);
      const before = (await indexesOf(`rm_${spec.name}`)).map((index) => index.indexname);
      for (const round of [1, 2]) {
        await store.ensureCollection(spec, `${spec.name}__b`);
        await store.commit(`build-${spec.name}-${round}`, [], round);
        expect(
          await store.swap({
            collection: spec.name,
            projection: `live-${spec.name}`,
            source: `${spec.name}__b`,
            sourceProjection: `build-${spec.name}-${round}`,
          }),
        ).to.equal(true);
        expect((await indexesOf(`rm_${spec.name}`)).map((index) => index.indexname)).to.deep.equal(before);
        expect(await indexesOf(`rm_${spec.name}__b`)).to.deep.equal([]);
      }
    });

    it('refuses work once closed, though the pool it shares with another store lives on', async () => {
      const spec = aSpec();
      const closing = await openPostgresReadModels(url);
      const other = await open();
      await closing.ensureCollection(spec);
      await closing.close();
      let refused = 0;
      for (const work of [
        () => closing.ping(),
        () => closing.getCheckpoint('x'),
        () => closing.commit('x', [], 1),
      ])
        await work().catch(() => (refused += 1));
      expect(refused).to.equal(3);
      await other.ping();
    });

    it('sends a writer that subscribed before a swap made elsewhere back to its checkpoint', async () => {
      const spec = aSpec();
      const projection = `live-${spec.name}`;
      const tenantId = uniqueTenant();
      const change = (position: number, name: string, collection = spec.name) => [
        { collection, tenantId, id: 's1', position, doc: { name } },
      ];
      const service = await open();
      const cli = await open();
      await service.ensureCollection(spec);
      await cli.ensureCollection(spec);
      await service.commit(projection, change(3, 'live'), 3);
      expect(await service.getProjectionState(projection)).to.deep.include({ checkpoint: 3 });

      await cli.ensureCollection(spec, `${spec.name}__b`);
      await cli.commit(`build-${spec.name}`, change(5, 'rebuilt', `${spec.name}__b`), 5);
      await cli.swap({
        collection: spec.name,
        projection,
        source: `${spec.name}__b`,
        sourceProjection: `build-${spec.name}`,
      });

      let refused: unknown;
      try {
        await service.commit(projection, change(6, 'folded from the replaced table'), 6);
      } catch (error) {
        refused = error;
      }
      expect(refused).to.be.instanceOf(CollectionSwappedError);
      expect((await service.get<{ name: string }>(spec.name, { tenantId, id: 's1' }))?.doc.name).to.equal(
        'rebuilt',
      );
      // Subscribed again, from the swapped-in checkpoint, it writes on.
      expect(await service.getProjectionState(projection)).to.deep.include({ checkpoint: 5 });
      await service.commit(projection, change(6, 'folded from the new table'), 6);
      expect((await service.get<{ name: string }>(spec.name, { tenantId, id: 's1' }))?.doc.name).to.equal(
        'folded from the new table',
      );
    });
  });
}

/** The embedded adapter commits the projections' batches of one moment together (sqlite-group-commit.ts). */
function groupCommits() {
  it('keeps commits asked for at once apart: one that fails changes nothing, the others are kept', async () => {
    const { dir, remove } = tempDir();
    const readModels = openSqliteReadModels(join(dir, 'readmodels.db'));
    const tenantId = uniqueTenant();
    const spec: CollectionSpec = { name: 'spots', fields: {}, indexes: [] };
    await readModels.ensureCollection(spec);
    const change = (collection: string, id: string) => ({
      collection,
      tenantId,
      id,
      position: 5,
      doc: { id },
    });
    const outcomes = await Promise.allSettled([
      readModels.commit('a', [change('spots', 'a1')], 5),
      readModels.commit('b', [change('spots', 'b1'), change('no_such_collection', 'b2')], 5),
      readModels.commit('c', [change('spots', 'c1')], 5),
    ]);
    expect(outcomes.map((outcome) => outcome.status)).to.deep.equal(['fulfilled', 'rejected', 'fulfilled']);
    const stored = await readModels.getMany(
      'spots',
      ['a1', 'b1', 'c1'].map((id) => ({ tenantId, id })),
    );
    expect(stored.map((found) => found?.doc ?? null)).to.deep.equal([{ id: 'a1' }, null, { id: 'c1' }]);
    expect(await Promise.all(['a', 'b', 'c'].map((name) => readModels.getCheckpoint(name)))).to.deep.equal([
      5, 0, 5,
    ]);
    await readModels.close();
    remove();
  });
}
