import type { CollectionSpec, Filter, ListQuery, Scalar } from './port.js';

// The SQL of the embedded read models (sqlite.ts): tables, generated columns, filters and keyset pages.

const identifier = /^[A-Za-z][A-Za-z0-9_]*$/;
const jsonPath = /^[A-Za-z0-9_]+(\.[A-Za-z0-9_]+)*$/;

export const table = (collection: string) => {
  if (!identifier.test(collection)) throw new Error(`Invalid read-model collection name: ${collection}`);
  return `rm_${collection}`;
};
export const column = (field: string) => `f_${field}`;

/**
 * SQL parameters: SQLite has no booleans. json_extract gives a boolean as 1 or 0, which a TEXT column keeps
 * as '1' or '0' (and the integer 1 never equals that text); bound as that text it matches a REAL column too.
 */
const bind = (value: Scalar): string | number => (typeof value === 'boolean' ? String(Number(value)) : value);

/** A condition of a WHERE clause with its parameters. */
export interface SqlPart {
  sql: string;
  params: (string | number)[];
}

export const filterSql = (filter: Filter): SqlPart => {
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
export const keysetSql = (query: ListQuery): SqlPart => {
  const { after, sort } = query;
  if (!after) return { sql: '', params: [] };
  const field = column(sort.field);
  if (after.value === null) {
    return sort.direction === 'desc'
      ? { sql: `(${field} IS NULL AND id < ?)`, params: [after.id] }
      : { sql: `((${field} IS NULL AND id > ?) OR ${field} IS NOT NULL)`, params: [after.id] };
  }
  // A descending page after a value is followed by the rows without one (NULLs sort last); those are read
  // by a second query (see `select`), because `… OR field IS NULL` here would keep SQLite from using the
  // cursor as the bound of its index scan, and a page deep in a large list would cost as much as its depth.
  const value = bind(after.value);
  return sort.direction === 'desc'
    ? { sql: `(${field}, id) < (?, ?)`, params: [value, after.id] }
    : { sql: `(${field}, id) > (?, ?)`, params: [value, after.id] };
};

/** A descending page after a non-null value: the rows without a value come after every row with one. */
export const continuesIntoNulls = (query: ListQuery): boolean =>
  query.sort.direction === 'desc' && query.after !== undefined && query.after.value !== null;

/** A queryable field's generated column. */
export const generatedColumn = (
  name: string,
  field: CollectionSpec['fields'][string],
  storage: 'STORED' | 'VIRTUAL',
) => {
  if (!identifier.test(name) || !jsonPath.test(field.path))
    throw new Error(`Invalid field ${name}: ${field.path}`);
  const type = field.type === 'number' ? 'REAL' : 'TEXT';
  return `${column(name)} ${type} GENERATED ALWAYS AS (json_extract(doc, '$.${field.path}')) ${storage}`;
};

export const createTableSql = (spec: CollectionSpec, tableName: string): string => {
  const generated = Object.entries(spec.fields).map(([name, field]) =>
    generatedColumn(name, field, 'STORED'),
  );
  const columns = [
    'tenant_id TEXT NOT NULL',
    'id TEXT NOT NULL',
    'position INTEGER NOT NULL',
    'doc TEXT',
    ...generated,
  ];
  return `
    CREATE TABLE IF NOT EXISTS ${tableName} (
      ${columns.join(',\n      ')},
      PRIMARY KEY (tenant_id, id)
    ) WITHOUT ROWID;`;
};

export const createIndexesSql = (spec: CollectionSpec, tableName: string): string =>
  spec.indexes
    .map((fields) => {
      const name = `${tableName}_by_${fields.join('_')}`;
      return `CREATE INDEX IF NOT EXISTS ${name} ON ${tableName} (tenant_id, ${fields.map(column).join(', ')}, id);`;
    })
    .join('\n');
