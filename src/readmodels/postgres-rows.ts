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
 * The documents travel as one text, `$4`, their JSON texts one per line, zipped by `unnest` with the arrays
 * of their keys: each document is parsed into `jsonb` once, on its own. JSON text has no raw line break (a
 * string's is written `\n`), so the line break cannot occur inside a document. An empty line is a deletion,
 * and so is a missing one: `string_to_array('', …)` is empty (a batch of one deletion), and `unnest` pads
 * the shorter array with NULL. Sent as one JSON array parsed into `jsonb` and split with
 * `jsonb_array_elements`, the same batches cost the server 10–30 % more CPU; as a `jsonb[]` literal (each
 * document quoted and escaped, then unescaped), two to three times as much (docs/benchmarks.md, the rebuild).
 */
export const upsertSql = (collection: string): string =>
  `INSERT INTO ${table(collection)} AS t (tenant_id, id, position, doc, escaped)
   SELECT k.tenant_id, k.id, k.position, NULLIF(k.doc, '')::jsonb, k.escaped
   FROM unnest($1::text[], $2::text[], $3::bigint[], string_to_array($4::text, E'\\n'), $5::boolean[])
     AS k(tenant_id, id, position, doc, escaped)
   ON CONFLICT (tenant_id, id) DO UPDATE
     SET position = excluded.position, doc = excluded.doc, escaped = excluded.escaped
   WHERE excluded.position > t.position`;

/** The `$4` of upsertSql: the stored documents' JSON texts one per line, an empty line for a deletion. */
export const documentLines = (jsons: readonly (string | null)[]): string =>
  jsons.map((json) => json ?? '').join('\n');

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
