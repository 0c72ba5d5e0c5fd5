import { createHash } from 'node:crypto';
import type { CollectionSpec, FieldSpec, Filter, ListQuery, Scalar } from './port.js';

/**
 * The SQL of the PostgreSQL read models, as pure functions of the collection's spec and the query: table
 * and index definitions, WHERE conditions and keyset bounds. Identifiers come only from specs checked here
 * (never from requests); values are always parameters.
 */

const identifier = /^[A-Za-z][A-Za-z0-9_]*$/;
const jsonPath = /^[A-Za-z0-9_]+(\.[A-Za-z0-9_]+)*$/;

/**
 * PostgreSQL cuts identifiers at 63 bytes, silently. A table's indexes are named `<table>_<10 hex>`, so a
 * table name is at most 52 characters: `rm_<name>` while that fits, else the name's first 36 characters and
 * 12 hex digits of its hash (snapshot names may be 63 characters long, `snapshot_` before them).
 */
const maxTableName = 52;

const shortHash = (text: string, length: number): string =>
  createHash('sha256').update(text).digest('hex').slice(0, length);

const quote = (name: string): string => `"${name}"`;

/** The table of a collection's physical name: `rm_<name>`, its case kept. */
export const tableName = (collection: string): string => {
  if (!identifier.test(collection)) throw new Error(`Invalid read-model collection name: ${collection}`);
  const name = `rm_${collection}`;
  return name.length <= maxTableName ? name : `rm_${collection.slice(0, 36)}_${shortHash(collection, 12)}`;
};

export const table = (collection: string): string => quote(tableName(collection));

/** A queryable field's generated column. */
export const column = (field: string): string => {
  if (!identifier.test(field)) throw new Error(`Invalid read-model field name: ${field}`);
  return quote(`f_${field}`);
};

/** `position.lat` as a text[] literal for #> and #>>; the path is checked, so it is safe inline. */
const pathLiteral = (path: string): string => {
  if (!jsonPath.test(path)) throw new Error(`Invalid read-model field path: ${path}`);
  return `'{${path.split('.').join(',')}}'`;
};

/**
 * A text field is the value's text (a number's digits, as SQLite's json_extract gives them), in byte order
 * (COLLATE "C", as SQLite and MongoDB compare strings). A number field is null unless the value is a JSON
 * number, so that a document with a string in a number field is still stored.
 */
const columnType = (field: FieldSpec): string =>
  field.type === 'number'
    ? `double precision GENERATED ALWAYS AS (CASE WHEN jsonb_typeof(doc #> ${pathLiteral(field.path)}) = 'number' THEN (doc #>> ${pathLiteral(field.path)})::double precision END) STORED`
    : `text COLLATE "C" GENERATED ALWAYS AS (doc #>> ${pathLiteral(field.path)}) STORED`;

/** The generated columns of the spec's fields, by column name (without quotes): `f_<field>`. */
export const generatedColumns = (spec: CollectionSpec): Map<string, string> =>
  new Map(
    Object.entries(spec.fields).map(([name, field]) => [`f_${name}`, `${column(name)} ${columnType(field)}`]),
  );

export const createTableSql = (spec: CollectionSpec, physical: string): string => {
  const name = tableName(physical);
  return `CREATE TABLE IF NOT EXISTS ${quote(name)} (
    tenant_id text COLLATE "C" NOT NULL,
    id text COLLATE "C" NOT NULL,
    position bigint NOT NULL,
    doc jsonb,
    escaped boolean NOT NULL DEFAULT false,
    ${[...generatedColumns(spec).values()].map((definition) => `${definition},`).join('\n    ')}
    CONSTRAINT ${quote(`${name}_pkey`)} PRIMARY KEY (tenant_id, id)
  )`;
};

/**
 * A declared index of exactly two number fields is a bounding box's, [latitude, longitude] as the
 * collections declare them: a GiST index over (tenant_id, point(longitude, latitude)), which the `bbox`
 * filter's point-in-box condition uses. Any other index is a B-tree over (tenant_id, fields…, id), its
 * fields NULLS FIRST: the lists' order (missing values lowest), read forwards or backwards.
 */
const isBoxIndex = (spec: CollectionSpec, fields: readonly string[]): fields is readonly [string, string] =>
  fields.length === 2 && fields.every((field) => spec.fields[field]?.type === 'number');

/** `point(lon, lat)`: the expression the GiST index and the bbox condition must spell alike. */
export const pointOf = (latField: string, lonField: string): string =>
  `point(${column(lonField)}, ${column(latField)})`;

export interface IndexDefinition {
  /** `rm_<physical>_<hash of the definition>`: the same definition has the same name on every table. */
  name: string;
  /** What follows `CREATE INDEX <name>`: `ON <table> <method and columns>`. */
  on: string;
}

export const indexDefinitions = (spec: CollectionSpec, physical: string): IndexDefinition[] => {
  const owner = tableName(physical);
  return spec.indexes
    .filter((fields) => fields.length > 0)
    .map((fields) => {
      for (const field of fields)
        if (!spec.fields[field]) throw new Error(`The read model ${spec.name} has no field ${field}`);
      const columns = isBoxIndex(spec, fields)
        ? `USING gist (tenant_id, ${pointOf(fields[0], fields[1])})`
        : `(tenant_id, ${fields.map((field) => `${column(field)} NULLS FIRST`).join(', ')}, id)`;
      const name = `${owner}_${shortHash(columns, 10)}`;
      return { name, on: `ON ${quote(owner)} ${columns}` };
    });
};

/** A WHERE clause under construction: conditions with $n placeholders, and their values. */
export class Conditions {
  readonly parts: string[] = [];
  readonly values: unknown[] = [];

  /** The placeholder of a new parameter. */
  param(value: unknown, cast: string): string {
    this.values.push(value);
    return `$${this.values.length}::${cast}`;
  }

  add(sql: string): void {
    this.parts.push(sql);
  }

  where(): string {
    return this.parts.join(' AND ');
  }
}

const castOf = (spec: CollectionSpec, field: string): string => {
  const fieldSpec = spec.fields[field];
  if (!fieldSpec) throw new Error(`The read model ${spec.name} has no field ${field}`);
  return fieldSpec.type === 'number' ? 'double precision' : 'text';
};

/** A filter value as its column holds it: JSON's text of a boolean in a text column, 1 or 0 in a number one. */
const valueFor = (cast: string, value: Scalar): string | number =>
  typeof value === 'boolean' ? (cast === 'text' ? String(value) : Number(value)) : value;

/** `%`, `_` and `\` match themselves in a LIKE pattern once escaped. */
const likePrefix = (text: string): string => `${text.replace(/[\\%_]/g, '\\$&')}%`;

export const addFilter = (where: Conditions, spec: CollectionSpec, filter: Filter): void => {
  switch (filter.op) {
    case 'eq': {
      const cast = castOf(spec, filter.field);
      where.add(`${column(filter.field)} = ${where.param(valueFor(cast, filter.value), cast)}`);
      return;
    }
    case 'in': {
      const cast = castOf(spec, filter.field);
      const values = filter.values.map((value) => valueFor(cast, value));
      where.add(`${column(filter.field)} = ANY(${where.param(values, `${cast}[]`)})`);
      return;
    }
    case 'gt':
    case 'gte':
    case 'lt':
    case 'lte': {
      const cast = castOf(spec, filter.field);
      const operator = { gt: '>', gte: '>=', lt: '<', lte: '<=' }[filter.op];
      where.add(`${column(filter.field)} ${operator} ${where.param(valueFor(cast, filter.value), cast)}`);
      return;
    }
    case 'prefix':
      // LIKE with a fixed prefix under COLLATE "C" is a range on the B-tree index.
      castOf(spec, filter.field);
      where.add(`${column(filter.field)} LIKE ${where.param(likePrefix(filter.value), 'text')}`);
      return;
    case 'bbox':
      addBox(where, filter);
      return;
  }
};

/**
 * Points inside the box. The point-in-box conditions are what the GiST index answers; PostgreSQL's
 * geometric operators compare with a tolerance of 1e-6, so the exact bounds on the columns come with them.
 * Across the antimeridian (minLon > maxLon) the box is two, east of minLon and west of maxLon.
 */
const addBox = (where: Conditions, filter: Extract<Filter, { op: 'bbox' }>): void => {
  const { minLon, minLat, maxLon, maxLat } = filter.box;
  const point = pointOf(filter.latField, filter.lonField);
  const n = (value: number) => where.param(value, 'double precision');
  const box = (west: string, east: string) =>
    `${point} <@ box(point(${west}, ${n(minLat)}), point(${east}, ${n(maxLat)}))`;
  const lat = column(filter.latField);
  const lon = column(filter.lonField);
  where.add(`${lat} BETWEEN ${n(minLat)} AND ${n(maxLat)}`);
  if (minLon <= maxLon) {
    where.add(box(n(minLon), n(maxLon)));
    where.add(`${lon} BETWEEN ${n(minLon)} AND ${n(maxLon)}`);
  } else {
    where.add(`(${box(n(minLon), `'Infinity'`)} OR ${box(`'-Infinity'`, n(maxLon))})`);
    where.add(`(${lon} >= ${n(minLon)} OR ${lon} <= ${n(maxLon)})`);
  }
};

/**
 * Keyset pagination over (sort value, id), missing values lowest: first going up, last going down. A
 * descending page after a value is followed by the rows without one; those are read by a second query
 * (`continuesIntoNulls`), since `… OR field IS NULL` here would keep the cursor from bounding the index scan.
 */
export const addKeyset = (where: Conditions, spec: CollectionSpec, query: ListQuery): void => {
  const { after, sort } = query;
  if (!after) return;
  const field = column(sort.field);
  const id = where.param(after.id, 'text');
  if (after.value === null) {
    where.add(
      sort.direction === 'desc'
        ? `(${field} IS NULL AND id < ${id})`
        : `((${field} IS NULL AND id > ${id}) OR ${field} IS NOT NULL)`,
    );
    return;
  }
  const cast = castOf(spec, sort.field);
  const value = where.param(valueFor(cast, after.value), cast);
  where.add(`(${field}, id) ${sort.direction === 'desc' ? '<' : '>'} (${value}, ${id})`);
};

/** A descending page after a non-null value: the rows without a value come after every row with one. */
export const continuesIntoNulls = (query: ListQuery): boolean =>
  query.sort.direction === 'desc' && query.after !== undefined && query.after.value !== null;

export const orderBy = (query: ListQuery): string => {
  const field = column(query.sort.field);
  return query.sort.direction === 'desc'
    ? `${field} DESC NULLS LAST, id DESC`
    : `${field} ASC NULLS FIRST, id ASC`;
};
