import { orUnavailable, type PoolOptions } from '../postgres/client.js';
import { acquireMigrated } from '../postgres/migrate.js';
import type { BlobStore } from './blob-store.js';
import { isSha256, sha256Of } from './hash.js';

const schema = [
  // Images are compressed already: EXTERNAL keeps the bytes out of line without trying to compress them.
  `CREATE TABLE blobs (
     sha256 text PRIMARY KEY,
     content_type text NOT NULL,
     bytes bytea NOT NULL,
     stored_at timestamptz NOT NULL DEFAULT now()
   );
   ALTER TABLE blobs ALTER COLUMN bytes SET STORAGE EXTERNAL;`,
];

/**
 * Image bytes in the PostgreSQL table `blobs`, one row per SHA-256, shared by every instance on the
 * database. A row is inserted whole in one statement, so a put that dies half way leaves nothing; racing
 * puts of the same bytes insert one row (ON CONFLICT DO NOTHING), and the others' identical bytes are
 * dropped. bytea rather than large objects: images are bounded in size (MEDIA_MAX_BYTES), a row is read whole,
 * and pg_dump and replication carry bytea with no extra step.
 */
export const openPostgresBlobs = async (url: string, options: PoolOptions = {}): Promise<BlobStore> => {
  const handle = await acquireMigrated(url, options, 'blobs', schema);
  const { pool } = handle;

  return {
    kind: 'postgres',

    put: async (sha256, bytes, contentType) => {
      if (!isSha256(sha256)) throw new Error(`Not a lower-case hex SHA-256: ${sha256}`);
      if (sha256Of(bytes) !== sha256) throw new Error(`The bytes do not hash to ${sha256}`);
      // Content-addressed: a row with this hash holds exactly these bytes, so do not send them again.
      const { rowCount } = await orUnavailable(pool.query('SELECT 1 FROM blobs WHERE sha256 = $1', [sha256]));
      if (rowCount) return;
      await orUnavailable(
        pool.query(
          `INSERT INTO blobs (sha256, content_type, bytes) VALUES ($1, $2, $3) ON CONFLICT (sha256) DO NOTHING`,
          [sha256, contentType, bytes],
        ),
      );
    },

    get: async (sha256) => {
      if (!isSha256(sha256)) return null;
      const { rows } = await orUnavailable(
        pool.query<{ bytes: Buffer }>('SELECT bytes FROM blobs WHERE sha256 = $1', [sha256]),
      );
      return rows[0]?.bytes ?? null;
    },

    ping: async () => {
      await orUnavailable(pool.query('SELECT 1'));
    },

    close: () => handle.release(),
  };
};
