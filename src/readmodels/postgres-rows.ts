import type { StoredDocument } from './port.js';
import { fromStored } from './postgres-nul.js';
import { table } from './postgres-sql.js';

// The tables of the PostgreSQL read models (postgres.ts), and how a document row is written and read.

export const schema = [
  `CREATE EXTENSION IF NOT EXISTS btree_gist;
   CREATE TABLE readmodel_checkpoints (
     projection text PRIMARY KEY,
     position bigint NOT NULL DEFAULT 0,
     epoch bigint NOT NULL DEFAULT 0,
     last_error text,
     last_error_at text
   );
   CREATE TABLE readmodel_parked_events (
     projection text NOT NULL,
     position bigint NOT NULL,
     tenant_id text NOT NULL,
     event_id text NOT NULL,
     event_type text NOT NULL,
     error text NOT NULL,
     parked_at text NOT NULL,
     PRIMARY KEY (projection, position)
   );`,
];

/**
 * The documents travel as one JSON array, `$4`, parsed once into `jsonb` and split with
 * `jsonb_array_elements`, beside arrays of their keys. An array of `jsonb` (`$4::jsonb[]`) cost two to
 * three times as much on the server: each document quoted and escaped into the array's literal, then
 * unescaped and parsed on its own (docs/benchmarks.md, the rebuild). A JSON `null` element is a deletion.
 */
export const upsertSql = (collection: string): string =>
  `INSERT INTO ${table(collection)} AS t (tenant_id, id, position, doc, escaped)
   SELECT k.tenant_id, k.id, k.position, NULLIF(d.doc, 'null'::jsonb), k.escaped
   FROM unnest($1::text[], $2::text[], $3::bigint[], $5::boolean[])
     WITH ORDINALITY AS k(tenant_id, id, position, escaped, n)
   JOIN jsonb_array_elements($4::jsonb) WITH ORDINALITY AS d(doc, n) USING (n)
   ON CONFLICT (tenant_id, id) DO UPDATE
     SET position = excluded.position, doc = excluded.doc, escaped = excluded.escaped
   WHERE excluded.position > t.position`;

/** The `$4` of upsertSql: the stored documents' JSON texts as one array, `null` for a deletion. */
export const documentsArray = (jsons: readonly (string | null)[]): string =>
  `[${jsons.map((json) => json ?? 'null').join(',')}]`;

export interface DocumentRow {
  tenant_id: string;
  id: string;
  position: string;
  doc: unknown;
  escaped: boolean;
}

export const stored = <D>(row: DocumentRow | undefined): StoredDocument<D> | null =>
  row && row.doc !== null
    ? { doc: fromStored<D>(row.doc, row.escaped), position: Number(row.position) }
    : null;
