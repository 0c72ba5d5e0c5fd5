import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import type { Config } from './config.js';
import type { EventStore } from './eventstore/port.js';
import type { BlobStore } from './media/blob-store.js';
import { openFileBlobs } from './media/file-blobs.js';
import { openSqliteEventStore } from './eventstore/sqlite.js';
import { withUpcasting } from './eventstore/upcasting.js';
import type { UpcasterRegistry } from './core/upcasting.js';
import type { ReadModelStore } from './readmodels/port.js';
import { openSqliteReadModels } from './readmodels/sqlite.js';
import type { IdempotencyStore } from './http/idempotency-store.js';
import { openSqliteIdempotencyStore } from './http/idempotency-store-sqlite.js';
import { memoryWindows, type RequestWindows } from './http/rate-limit.js';

export interface Stores {
  eventStore: EventStore;
  readModels: ReadModelStore;
  /** Image bytes by SHA-256: files in DATA_DIR/blobs, GridFS (MONGODB_URL) or PostgreSQL (DATABASE_URL). */
  blobs: BlobStore;
  /** Idempotency-Key records: DATA_DIR/idempotency.db, or idempotency_keys in MongoDB or PostgreSQL. */
  idempotency: IdempotencyStore;
  /** The request rate limit's windows: in memory per instance, or shared in PostgreSQL (DATABASE_URL). */
  requestWindows: RequestWindows;
  close: () => Promise<void>;
}

/**
 * The embedded SQLite files unless EVENTSTORE_URL / MONGODB_URL / DATABASE_URL name a server. The production
 * clients are loaded only when used, so the embedded default starts without them. `eventSchemas` (the
 * features', src/features.ts) is what the event store upcasts reads to and stamps appends with.
 */
export interface StoreObservers {
  /** A PostgreSQL consumer group's claims could not be renewed: the service logs and counts it. */
  onClaimRenewalFailed?: (group: string, error: unknown) => void;
}

export const openStores = async (
  config: Pick<Config, 'dataDir' | 'eventStoreUrl' | 'mongodbUrl' | 'databaseUrl' | 'databasePoolSize'>,
  { eventSchemas, ...observers }: { eventSchemas: UpcasterRegistry } & StoreObservers,
): Promise<Stores> => {
  mkdirSync(config.dataDir, { recursive: true });
  const postgres = { url: config.databaseUrl, options: { poolSize: config.databasePoolSize } };
  // Every event read through the service's store comes out at the current version of its type. The events:
  // EventStoreDB when EVENTSTORE_URL is set, else PostgreSQL with DATABASE_URL, else the embedded file.
  const eventStore = withUpcasting(
    config.eventStoreUrl
      ? await (await import('./eventstore/esdb.js')).openEventStoreDb(config.eventStoreUrl)
      : postgres.url
        ? await (
            await import('./eventstore/postgres.js')
          ).openPostgresEventStore(postgres.url, { ...postgres.options, ...observers })
        : openSqliteEventStore(join(config.dataDir, 'events.db')),
    eventSchemas,
  );
  // Read models, blobs and idempotency records: MongoDB when MONGODB_URL is set, else PostgreSQL with
  // DATABASE_URL (one pool for every adapter), else the embedded files.
  const readModels = config.mongodbUrl
    ? await (await import('./readmodels/mongo.js')).openMongoReadModels(config.mongodbUrl)
    : postgres.url
      ? await (
          await import('./readmodels/postgres.js')
        ).openPostgresReadModels(postgres.url, postgres.options)
      : openSqliteReadModels(join(config.dataDir, 'readmodels.db'));
  const blobs = config.mongodbUrl
    ? await (await import('./media/gridfs-blobs.js')).openGridFsBlobs(config.mongodbUrl)
    : postgres.url
      ? await (await import('./media/postgres-blobs.js')).openPostgresBlobs(postgres.url, postgres.options)
      : openFileBlobs(join(config.dataDir, 'blobs'));
  const idempotency = config.mongodbUrl
    ? await (await import('./http/idempotency-store-mongo.js')).openMongoIdempotencyStore(config.mongodbUrl)
    : postgres.url
      ? await (
          await import('./http/idempotency-store-postgres.js')
        ).openPostgresIdempotencyStore(postgres.url, postgres.options)
      : openSqliteIdempotencyStore(join(config.dataDir, 'idempotency.db'));
  // MongoDB keeps no request windows: with MONGODB_URL each instance counts on its own, as embedded.
  const requestWindows =
    postgres.url && !config.mongodbUrl
      ? await (
          await import('./http/rate-limit-postgres.js')
        ).openPostgresRequestWindows(postgres.url, postgres.options)
      : memoryWindows();
  return {
    eventStore,
    readModels,
    blobs,
    idempotency,
    requestWindows,
    close: async () => {
      await requestWindows.close();
      await idempotency.close();
      await blobs.close();
      await readModels.close();
      await eventStore.close();
    },
  };
};
