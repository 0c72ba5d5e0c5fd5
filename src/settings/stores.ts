import { countSetting, declare, namedSettings, text, urlSetting } from './declare.js';

const eventStoreSchemes = ['esdb', 'esdb+discover', 'kurrentdb', 'kdb'] as const;

/** The stores: embedded in DATA_DIR, or EventStoreDB, MongoDB or PostgreSQL. */
export const storeSettings = namedSettings({
  DATA_DIR: declare({
    default: './data',
    expected: 'a directory',
    description: 'embedded event store, read models, blobs and development secrets',
    parse: text,
  }),
  EVENTSTORE_URL: urlSetting(eventStoreSchemes, 'esdb://host:2113?tls=false', {
    defaultShown: 'none: embedded SQLite',
    description: 'use EventStoreDB for the events',
  }),
  MONGODB_URL: urlSetting(['mongodb', 'mongodb+srv'], 'mongodb://host:27017/observations', {
    defaultShown: 'none: embedded SQLite',
    description: 'use MongoDB for the read models, blobs and limits',
  }),
  DATABASE_URL: urlSetting(['postgres', 'postgresql'], 'postgres://user:password@host:5432/observations', {
    defaultShown: 'none: embedded SQLite',
    description:
      'use PostgreSQL for every store: the events unless EVENTSTORE_URL is set, the others unless MONGODB_URL is; its tables are migrated on start',
  }),
  DATABASE_POOL_SIZE: countSetting(
    '10',
    'PostgreSQL connections one process opens at most, all its stores together',
  ),
});
