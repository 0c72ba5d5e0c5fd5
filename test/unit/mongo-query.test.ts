import { expect } from 'chai';
import type { CollectionSpec, ListQuery } from '../../src/readmodels/port.js';
import { databaseName } from '../../src/mongodb/client.js';
import { toGuardedReplace, toIndexes, toMongoFilter, toMongoSort } from '../../src/readmodels/mongo.js';

const spec: CollectionSpec = {
  name: 'observations',
  fields: {
    observedAt: { path: 'observedAt', type: 'text' },
    species: { path: 'species.name', type: 'text' },
    count: { path: 'count', type: 'number' },
    lat: { path: 'position.lat', type: 'number' },
    lon: { path: 'position.lon', type: 'number' },
  },
  indexes: [['observedAt'], ['species', 'observedAt']],
};

const query = (overrides: Partial<ListQuery> = {}): ListQuery => ({
  tenantId: 't1',
  filters: [],
  sort: { field: 'observedAt', direction: 'desc' },
  limit: 50,
  ...overrides,
});

/** The conditions the filter adds to the tenant and tombstone terms every query has. */
const conditionsOf = (overrides: Partial<ListQuery>): unknown => toMongoFilter(spec, query(overrides)).$and;

describe('the MongoDB read-model query translation', () => {
  it('always scopes a query to its tenant and skips tombstones', () => {
    expect(toMongoFilter(spec, query())).to.deep.equal({ tenantId: 't1', deleted: { $ne: true } });
  });

  it('turns eq into an equality on the field path inside doc', () => {
    expect(conditionsOf({ filters: [{ op: 'eq', field: 'species', value: 'Parus major' }] })).to.deep.equal([
      { 'doc.species.name': 'Parus major' },
    ]);
  });

  it('turns in into $in', () => {
    expect(conditionsOf({ filters: [{ op: 'in', field: 'count', values: [1, 2] }] })).to.deep.equal([
      { 'doc.count': { $in: [1, 2] } },
    ]);
  });

  it('keeps two range bounds on the same field as two conditions', () => {
    const filters = [
      { op: 'gte', field: 'observedAt', value: '2024-01-01' },
      { op: 'lt', field: 'observedAt', value: '2024-02-01' },
    ] as const;
    expect(conditionsOf({ filters })).to.deep.equal([
      { 'doc.observedAt': { $gte: '2024-01-01' } },
      { 'doc.observedAt': { $lt: '2024-02-01' } },
    ]);
  });

  it('translates gt and lte as well', () => {
    const filters = [
      { op: 'gt', field: 'count', value: 3 },
      { op: 'lte', field: 'count', value: 9 },
    ] as const;
    expect(conditionsOf({ filters })).to.deep.equal([
      { 'doc.count': { $gt: 3 } },
      { 'doc.count': { $lte: 9 } },
    ]);
  });

  it('anchors a prefix and escapes the regular expression characters in it', () => {
    const conditions = conditionsOf({
      filters: [{ op: 'prefix', field: 'species', value: 'a.b*(c)[d]+?^$|\\' }],
    });
    expect(conditions).to.deep.equal([
      { 'doc.species.name': { $regex: '^a\\.b\\*\\(c\\)\\[d\\]\\+\\?\\^\\$\\|\\\\' } },
    ]);
    const pattern = new RegExp(
      (conditions as [{ 'doc.species.name': { $regex: string } }])[0]['doc.species.name'].$regex,
    );
    expect(pattern.test('a.b*(c)[d]+?^$|\\ and more')).to.equal(true);
    expect(pattern.test('aXb*(c)[d]+?^$|\\')).to.equal(false);
    expect(pattern.test('x a.b*(c)[d]+?^$|\\')).to.equal(false);
  });

  it('turns a bounding box into ranges on the latitude and longitude paths', () => {
    const box = { minLon: 4, minLat: 50, maxLon: 6, maxLat: 52 };
    expect(conditionsOf({ filters: [{ op: 'bbox', latField: 'lat', lonField: 'lon', box }] })).to.deep.equal([
      { 'doc.position.lat': { $gte: 50, $lte: 52 }, 'doc.position.lon': { $gte: 4, $lte: 6 } },
    ]);
  });

  it('splits a bounding box that crosses the antimeridian into east of minLon or west of maxLon', () => {
    const box = { minLon: 170, minLat: -20, maxLon: -170, maxLat: -10 };
    expect(conditionsOf({ filters: [{ op: 'bbox', latField: 'lat', lonField: 'lon', box }] })).to.deep.equal([
      {
        'doc.position.lat': { $gte: -20, $lte: -10 },
        $or: [{ 'doc.position.lon': { $gte: 170 } }, { 'doc.position.lon': { $lte: -170 } }],
      },
    ]);
  });

  it('rejects a filter on a field the read model does not declare', () => {
    expect(() => toMongoFilter(spec, query({ filters: [{ op: 'eq', field: 'nope', value: 1 }] }))).to.throw(
      /no field nope/,
    );
  });

  it('sorts by the sort field path and then by id, both in the query direction', () => {
    expect(toMongoSort(spec, query())).to.deep.equal({ 'doc.observedAt': -1, id: -1 });
    const ascending = toMongoSort(spec, query({ sort: { field: 'species', direction: 'asc' } }));
    expect(Object.entries(ascending)).to.deep.equal([
      ['doc.species.name', 1],
      ['id', 1],
    ]);
  });

  describe('keyset pagination', () => {
    const path = 'doc.observedAt';

    it('continues a descending list below the last value, then below the last id, then with the nulls', () => {
      expect(conditionsOf({ after: { value: '2024-01-05', id: 'o7' } })).to.deep.equal([
        {
          $or: [
            { [path]: { $lt: '2024-01-05' } },
            { [path]: '2024-01-05', id: { $lt: 'o7' } },
            { [path]: null },
          ],
        },
      ]);
    });

    it('continues an ascending list above the last value or above the last id', () => {
      const sort = { field: 'observedAt', direction: 'asc' } as const;
      expect(conditionsOf({ sort, after: { value: '2024-01-05', id: 'o7' } })).to.deep.equal([
        { $or: [{ [path]: { $gt: '2024-01-05' } }, { [path]: '2024-01-05', id: { $gt: 'o7' } }] },
      ]);
    });

    it('continues a descending list after a null value with only the remaining nulls', () => {
      expect(conditionsOf({ after: { value: null, id: 'o7' } })).to.deep.equal([
        { [path]: null, id: { $lt: 'o7' } },
      ]);
    });

    it('continues an ascending list after a null value with the remaining nulls and every value', () => {
      const sort = { field: 'observedAt', direction: 'asc' } as const;
      expect(conditionsOf({ sort, after: { value: null, id: 'o7' } })).to.deep.equal([
        { $or: [{ [path]: null, id: { $gt: 'o7' } }, { [path]: { $ne: null } }] },
      ]);
    });

    /**
     * Just enough of MongoDB's matching and ordering to page through rows: a missing or null value matches
     * `null`, `$lt`/`$gt` never match null, and null sorts before every value.
     */
    type Row = { id: string; doc: { observedAt?: string | null } };
    const valueAt = (row: Row, key: string): unknown =>
      key === 'id' ? row.id : (row.doc.observedAt ?? null);
    const matches = (row: Row, filter: Record<string, unknown>): boolean =>
      Object.entries(filter).every(([key, condition]) => {
        if (key === '$or') return (condition as Record<string, unknown>[]).some((f) => matches(row, f));
        if (key === '$and') return (condition as Record<string, unknown>[]).every((f) => matches(row, f));
        if (key === 'tenantId' || key === 'deleted') return true;
        const value = valueAt(row, key);
        if (condition === null || typeof condition !== 'object') return value === condition;
        const [[op, operand]] = Object.entries(condition) as [[string, string | null]];
        if (op === '$ne') return value !== operand;
        if (value === null || operand === null) return false;
        return op === '$lt' ? (value as string) < operand : (value as string) > operand;
      });
    const compare = (a: Row, b: Row): number => {
      const [x, y] = [a.doc.observedAt ?? null, b.doc.observedAt ?? null];
      if (x !== y) return x === null ? -1 : y === null ? 1 : x < y ? -1 : 1;
      return a.id < b.id ? -1 : a.id > b.id ? 1 : 0;
    };
    const rows: Row[] = [
      { id: 'a', doc: { observedAt: '2024-01-02' } },
      { id: 'b', doc: {} },
      { id: 'c', doc: { observedAt: '2024-01-01' } },
      { id: 'd', doc: { observedAt: null } },
      { id: 'e', doc: { observedAt: '2024-01-02' } },
      { id: 'f', doc: { observedAt: '2024-01-03' } },
      { id: 'g', doc: {} },
    ];

    for (const direction of ['asc', 'desc'] as const) {
      it(`walks every ${direction} page in sort order without skipping or repeating a row, nulls included`, () => {
        const sorted = [...rows].sort((a, b) => (direction === 'asc' ? compare(a, b) : compare(b, a)));
        const seen: string[] = [];
        let after: ListQuery['after'];
        for (let page = 0; page < rows.length; page += 1) {
          const filter = toMongoFilter(spec, query({ sort: { field: 'observedAt', direction }, after }));
          const next = sorted.filter((row) => matches(row, filter)).slice(0, 2);
          if (next.length === 0) break;
          seen.push(...next.map((row) => row.id));
          const last = next[next.length - 1] as Row;
          after = { value: last.doc.observedAt ?? null, id: last.id };
        }
        expect(seen).to.deep.equal(sorted.map((row) => row.id));
      });
    }

    it('puts the keyset condition after the filters', () => {
      const filters = [{ op: 'eq', field: 'count', value: 2 }] as const;
      expect(conditionsOf({ filters, after: { value: null, id: 'o7' } })).to.deep.equal([
        { 'doc.count': 2 },
        { [path]: null, id: { $lt: 'o7' } },
      ]);
    });
  });

  it('creates a unique tenant and id index and one tenant-prefixed, id-suffixed index per declared index', () => {
    const indexes = toIndexes(spec);
    expect(indexes).to.deep.equal([
      { key: { tenantId: 1, id: 1 }, name: 'observations_tenantId_id', unique: true },
      { key: { tenantId: 1, 'doc.observedAt': 1, id: 1 }, name: 'observations_observedAt' },
      {
        key: { tenantId: 1, 'doc.species.name': 1, 'doc.observedAt': 1, id: 1 },
        name: 'observations_species_observedAt',
      },
    ]);
    expect(Object.keys(indexes[2]?.key ?? {})).to.deep.equal([
      'tenantId',
      'doc.species.name',
      'doc.observedAt',
      'id',
    ]);
  });

  it('guards a write by the stored position and turns a deletion into a tombstone', () => {
    const change = { collection: 'observations', tenantId: 't1', id: 'o1', position: 42 };
    expect(toGuardedReplace({ ...change, doc: { a: 1 } })).to.deep.equal({
      filter: { _id: 't1:o1', position: { $lt: 42 } },
      replacement: { tenantId: 't1', id: 'o1', position: 42, doc: { a: 1 } },
      upsert: true,
    });
    expect(toGuardedReplace({ ...change, doc: null }).replacement).to.deep.equal({
      tenantId: 't1',
      id: 'o1',
      position: 42,
      doc: null,
      deleted: true,
    });
  });

  it('takes the database name from the URL path and falls back to observations', () => {
    expect(databaseName('mongodb://localhost:27017/readmodels')).to.equal('readmodels');
    expect(databaseName('mongodb://u:p@h1:27017,h2:27017/rm?replicaSet=rs0')).to.equal('rm');
    expect(databaseName('mongodb+srv://cluster.example.net/?retryWrites=true')).to.equal('observations');
    expect(databaseName('mongodb://localhost:27017')).to.equal('observations');
  });
});
