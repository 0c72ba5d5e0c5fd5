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

export const upsertSql = (collection: string): string =>
  `INSERT INTO ${table(collection)} AS t (tenant_id, id, position, doc, escaped)
   SELECT * FROM unnest($1::text[], $2::text[], $3::bigint[], $4::jsonb[], $5::boolean[])
   ON CONFLICT (tenant_id, id) DO UPDATE
     SET position = excluded.position, doc = excluded.doc, escaped = excluded.escaped
   WHERE excluded.position > t.position`;

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
