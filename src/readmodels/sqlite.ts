import Database from 'better-sqlite3';
import type {
  CollectionSpec,
  DocumentChange,
  Filter,
  JsonRow,
  ListQuery,
  ReadModelStore,
  Scalar,
  StoredDocument,
} from './port.js';

/**
 * Embedded read models: one SQLite file, one table per collection. A document is stored whole as JSON;
 * each queryable field is a generated column over it, so indexes, filters and keyset sorting work on plain
 * columns. Deleted documents stay as tombstones (doc IS NULL) so that their position still guards them.
 */

const identifier = /^[A-Za-z][A-Za-z0-9_]*$/;
const jsonPath = /^[A-Za-z0-9_]+(\.[A-Za-z0-9_]+)*$/;

const table = (collection: string) => `rm_${collection}`;
const column = (field: string) => `f_${field}`;

/** SQL parameters: SQLite has no booleans. */
const bind = (value: Scalar): string | number => (typeof value === 'boolean' ? Number(value) : value);

const filterSql = (filter: Filter): { sql: string; params: (string | number)[] } => {
  switch (filter.op) {
    case 'eq':
      return { sql: `${column(filter.field)} = ?`, params: [bind(filter.value)] };
    case 'in':
      return {
        sql: `${column(filter.field)} IN (${filter.values.map(() => '?').join(', ') || 'NULL'})`,
        params: filter.values.map(bind),
      };
    case 'gt':
    case 'gte':
    case 'lt':
    case 'lte': {
      const operator = { gt: '>', gte: '>=', lt: '<', lte: '<=' }[filter.op];
      return { sql: `${column(filter.field)} ${operator} ?`, params: [bind(filter.value)] };
    }
    case 'prefix':
      return {
        sql: `substr(${column(filter.field)}, 1, ?) = ?`,
        params: [filter.value.length, filter.value],
      };
    case 'bbox': {
      const { minLon, minLat, maxLon, maxLat } = filter.box;
      const lat = column(filter.latField);
      const lon = column(filter.lonField);
      const lonSql = minLon <= maxLon ? `${lon} BETWEEN ? AND ?` : `(${lon} >= ? OR ${lon} <= ?)`;
      return { sql: `${lat} BETWEEN ? AND ? AND ${lonSql}`, params: [minLat, maxLat, minLon, maxLon] };
    }
  }
};

/**
 * Keyset pagination over (sort value, id). SQLite sorts NULL lowest, so in descending order documents
 * without a sort value come after every document that has one.
 */
const keysetSql = (query: ListQuery): { sql: string; params: (string | number)[] } => {
  const { after, sort } = query;
  if (!after) return { sql: '', params: [] };
  const field = column(sort.field);
  if (after.value === null) {
    return sort.direction === 'desc'
      ? { sql: `(${field} IS NULL AND id < ?)`, params: [after.id] }
      : { sql: `((${field} IS NULL AND id > ?) OR ${field} IS NOT NULL)`, params: [after.id] };
  }
  const value = bind(after.value);
  return sort.direction === 'desc'
    ? { sql: `((${field}, id) < (?, ?) OR ${field} IS NULL)`, params: [value, after.id] }
    : { sql: `(${field}, id) > (?, ?)`, params: [value, after.id] };
};

const createTableSql = (spec: CollectionSpec): string => {
  const generated = Object.entries(spec.fields).map(([name, field]) => {
    if (!identifier.test(name) || !jsonPath.test(field.path))
      throw new Error(`Invalid field ${name}: ${field.path}`);
    const type = field.type === 'number' ? 'REAL' : 'TEXT';
    return `${column(name)} ${type} GENERATED ALWAYS AS (json_extract(doc, '$.${field.path}')) VIRTUAL`;
  });
  const indexes = spec.indexes.map((fields) => {
    const name = `${table(spec.name)}_by_${fields.join('_')}`;
    return `CREATE INDEX IF NOT EXISTS ${name} ON ${table(spec.name)} (tenant_id, ${fields.map(column).join(', ')}, id);`;
  });
  const columns = [
    'tenant_id TEXT NOT NULL',
    'id TEXT NOT NULL',
    'position INTEGER NOT NULL',
    'doc TEXT',
    ...generated,
  ];
  return `
    CREATE TABLE IF NOT EXISTS ${table(spec.name)} (
      ${columns.join(',\n      ')},
      PRIMARY KEY (tenant_id, id)
    ) WITHOUT ROWID;
    ${indexes.join('\n    ')}`;
};

export const openSqliteReadModels = (file: string): ReadModelStore => {
  const db = new Database(file);
  db.pragma('journal_mode = WAL');
  // Read models can be rebuilt from the events, and the checkpoint rolls back with them: NORMAL is enough.
  db.pragma('synchronous = NORMAL');
  db.pragma('busy_timeout = 5000');
  db.exec('CREATE TABLE IF NOT EXISTS checkpoints (projection TEXT PRIMARY KEY, position INTEGER NOT NULL)');

  const collections = new Map<string, CollectionSpec>();
  const statements = new Map<string, Database.Statement>();
  const prepare = (sql: string) => {
    let statement = statements.get(sql);
    if (!statement) {
      statement = db.prepare(sql);
      statements.set(sql, statement);
    }
    return statement;
  };
  const known = (collection: string) => {
    if (!collections.has(collection)) throw new Error(`Unknown read-model collection: ${collection}`);
    return table(collection);
  };

  const moveCheckpoint = db.prepare(
    `INSERT INTO checkpoints (projection, position) VALUES (?, ?)
     ON CONFLICT (projection) DO UPDATE SET position = max(position, excluded.position)`,
  );

  const commit = db.transaction(
    (projection: string, changes: readonly DocumentChange[], checkpoint: number) => {
      for (const change of changes) {
        prepare(
          `INSERT INTO ${known(change.collection)} (tenant_id, id, position, doc) VALUES (?, ?, ?, ?)
         ON CONFLICT (tenant_id, id) DO UPDATE SET position = excluded.position, doc = excluded.doc
         WHERE excluded.position > position`,
        ).run(
          change.tenantId,
          change.id,
          change.position,
          change.doc === null ? null : JSON.stringify(change.doc),
        );
      }
      moveCheckpoint.run(projection, checkpoint);
    },
  );

  const select = (collection: string, query: ListQuery): JsonRow[] => {
    const parts = [...query.filters.map(filterSql), keysetSql(query)].filter((part) => part.sql !== '');
    const direction = query.sort.direction === 'desc' ? 'DESC' : 'ASC';
    const sortColumn = column(query.sort.field);
    const sql = `SELECT doc AS json, id, ${sortColumn} AS sortValue FROM ${known(collection)}
      WHERE tenant_id = ? AND doc IS NOT NULL${parts.map((part) => ` AND ${part.sql}`).join('')}
      ORDER BY ${sortColumn} ${direction}, id ${direction} LIMIT ?`;
    return prepare(sql).all(
      query.tenantId,
      ...parts.flatMap((part) => part.params),
      query.limit,
    ) as JsonRow[];
  };

  return {
    kind: 'sqlite',

    ensureCollection: (spec) => {
      db.exec(createTableSql(spec));
      collections.set(spec.name, spec);
      return Promise.resolve();
    },

    get: <D>(collection: string, { tenantId, id }: { tenantId: string; id: string }) => {
      const row = prepare(
        `SELECT doc, position FROM ${known(collection)} WHERE tenant_id = ? AND id = ?`,
      ).get(tenantId, id) as { doc: string | null; position: number } | undefined;
      const found: StoredDocument<D> | null =
        row?.doc != null ? { doc: JSON.parse(row.doc) as D, position: row.position } : null;
      return Promise.resolve(found);
    },

    list: <D>(collection: string, query: ListQuery) =>
      Promise.resolve(select(collection, query).map((row) => JSON.parse(row.json) as D)),

    listJson: (collection, query) => Promise.resolve(select(collection, query)),

    commit: (projection, changes, checkpoint) => {
      commit(projection, changes, checkpoint);
      return Promise.resolve();
    },

    getCheckpoint: (projection) => {
      const row = prepare('SELECT position FROM checkpoints WHERE projection = ?').get(projection) as
        { position: number } | undefined;
      return Promise.resolve(row?.position ?? 0);
    },

    reset: (projection, collection) => {
      db.transaction(() => {
        prepare('DELETE FROM checkpoints WHERE projection = ?').run(projection);
        prepare(`DELETE FROM ${known(collection)}`).run();
      })();
      return Promise.resolve();
    },

    ping: () => {
      prepare('SELECT 1').get();
      return Promise.resolve();
    },

    close: () => {
      db.close();
      return Promise.resolve();
    },
  };
};
