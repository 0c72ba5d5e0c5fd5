import { join } from 'node:path';
import { openSqliteEventStore } from '../../src/eventstore/sqlite.js';
import { openEventStoreDb } from '../../src/eventstore/esdb.js';
import { openPostgresEventStore } from '../../src/eventstore/postgres.js';
import { describeBackend, tempDir } from '../support/adapters.js';
import { describePostgres } from '../support/postgres.js';
import { eventStoreContract } from './event-store.contract.js';

describe('EventStore contract', () => {
  describe('on the embedded SQLite adapter', () => {
    eventStoreContract(
      () => {
        const { dir, remove } = tempDir();
        const store = openSqliteEventStore(join(dir, 'events.db'));
        return Promise.resolve({
          store,
          another: () => Promise.resolve(openSqliteEventStore(join(dir, 'events.db'))),
          close: async () => {
            await store.close();
            remove();
          },
        });
      },
      { exclusiveLeases: true },
    );
  });

  describeBackend('on EventStoreDB', 'EVENTSTORE_URL', (url) => {
    eventStoreContract(
      async () => {
        const store = await openEventStoreDb(url);
        return { store, another: () => openEventStoreDb(url), close: () => store.close() };
      },
      { exclusiveLeases: false },
    );
  });

  describePostgres('on PostgreSQL', (url) => {
    eventStoreContract(
      async () => {
        const store = await openPostgresEventStore(url);
        return { store, another: () => openPostgresEventStore(url), close: () => store.close() };
      },
      { exclusiveLeases: false },
    );
  });
});
