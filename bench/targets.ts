import type { EventStore } from '../src/eventstore/port.js';
import { openSqliteEventStore } from '../src/eventstore/sqlite.js';
import { isPostgresUrl } from '../src/postgres/client.js';
import type { ReadModelStore } from '../src/readmodels/port.js';
import { openSqliteReadModels } from '../src/readmodels/sqlite.js';

/**
 * Where a bench phase keeps its events or read models: a SQLite file, or a postgres:// URL (a database of
 * bench/postgres-db.ts). One string, so that it also crosses into a measured child process as an argument.
 * The PostgreSQL adapters are loaded only when used, as src/stores.ts loads them.
 */

export const openEventStoreAt = async (target: string): Promise<EventStore> =>
  isPostgresUrl(target)
    ? (await import('../src/eventstore/postgres.js')).openPostgresEventStore(target)
    : openSqliteEventStore(target);

export const openReadModelsAt = async (target: string): Promise<ReadModelStore> =>
  isPostgresUrl(target)
    ? (await import('../src/readmodels/postgres.js')).openPostgresReadModels(target)
    : openSqliteReadModels(target);
