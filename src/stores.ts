import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import type { Config } from './config.js';
import type { EventStore } from './eventstore/port.js';
import { openSqliteEventStore } from './eventstore/sqlite.js';
import type { ReadModelStore } from './readmodels/port.js';
import { openSqliteReadModels } from './readmodels/sqlite.js';

export interface Stores {
  eventStore: EventStore;
  readModels: ReadModelStore;
  close: () => Promise<void>;
}

/**
 * The embedded SQLite files unless EVENTSTORE_URL / MONGODB_URL name a server. The production clients are
 * loaded only when used, so the embedded default starts without them.
 */
export const openStores = async (
  config: Pick<Config, 'dataDir' | 'eventStoreUrl' | 'mongodbUrl'>,
): Promise<Stores> => {
  mkdirSync(config.dataDir, { recursive: true });
  const eventStore = config.eventStoreUrl
    ? await (await import('./eventstore/esdb.js')).openEventStoreDb(config.eventStoreUrl)
    : openSqliteEventStore(join(config.dataDir, 'events.db'));
  const readModels = config.mongodbUrl
    ? await (await import('./readmodels/mongo.js')).openMongoReadModels(config.mongodbUrl)
    : openSqliteReadModels(join(config.dataDir, 'readmodels.db'));
  return {
    eventStore,
    readModels,
    close: async () => {
      await readModels.close();
      await eventStore.close();
    },
  };
};
