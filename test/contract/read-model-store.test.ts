import { join } from 'node:path';
import { openSqliteEventStore } from '../../src/eventstore/sqlite.js';
import { openMongoReadModels } from '../../src/readmodels/mongo.js';
import { openPostgresReadModels } from '../../src/readmodels/postgres.js';
import type { ReadModelStore } from '../../src/readmodels/port.js';
import { openSqliteReadModels } from '../../src/readmodels/sqlite.js';
import { describeBackend, tempDir } from '../support/adapters.js';
import { describePostgres } from '../support/postgres.js';
import { readModelStoreContract } from './read-model-store.contract.js';

/** The read-model store under test, beside an embedded event store for the projection tests. */
const fixture = async (openReadModels: (dir: string) => Promise<ReadModelStore>) => {
  const { dir, remove } = tempDir();
  const eventStore = openSqliteEventStore(join(dir, 'events.db'));
  const readModels = await openReadModels(dir);
  return {
    eventStore,
    readModels,
    close: async () => {
      await readModels.close();
      await eventStore.close();
      remove();
    },
  };
};

describe('ReadModelStore contract', () => {
  describe('on the embedded SQLite adapter', () => {
    readModelStoreContract(() =>
      fixture((dir) => Promise.resolve(openSqliteReadModels(join(dir, 'readmodels.db')))),
    );
  });

  describePostgres('on PostgreSQL', (url) => {
    readModelStoreContract(() => fixture(() => openPostgresReadModels(url)));
  });

  describeBackend('on MongoDB', 'MONGODB_URL', (url) => {
    readModelStoreContract(() => fixture(() => openMongoReadModels(url)));
  });
});
