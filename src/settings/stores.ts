import { declare, positiveCount, text, url, urlForm } from './declare.js';

const eventStoreSchemes = ['esdb', 'esdb+discover', 'kurrentdb', 'kdb'] as const;

/** The stores: embedded in DATA_DIR, or EventStoreDB, MongoDB or PostgreSQL. */
export const storeSettings = {
  DATA_DIR: declare('DATA_DIR')({
    default: './data',
    expected: 'a directory',
    description: 'embedded event store, read models, blobs and development secrets',
    parse: text,
  }),
  EVENTSTORE_URL: declare('EVENTSTORE_URL')({
    default: null,
    defaultShown: 'none: embedded SQLite',
    expected: urlForm(eventStoreSchemes, 'esdb://host:2113?tls=false'),
    description: 'use EventStoreDB for the events',
    parse: url(eventStoreSchemes),
  }),
  MONGODB_URL: declare('MONGODB_URL')({
    default: null,
    defaultShown: 'none: embedded SQLite',
    expected: urlForm(['mongodb', 'mongodb+srv'], 'mongodb://host:27017/observations'),
    description: 'use MongoDB for the read models, blobs and limits',
    parse: url(['mongodb', 'mongodb+srv']),
  }),
  DATABASE_URL: declare('DATABASE_URL')({
    default: null,
    defaultShown: 'none: embedded SQLite',
    expected: urlForm(['postgres', 'postgresql'], 'postgres://user:password@host:5432/observations'),
    description:
      'use PostgreSQL for every store: the events unless EVENTSTORE_URL is set, the others unless MONGODB_URL is; its tables are migrated on start',
    parse: url(['postgres', 'postgresql']),
  }),
  DATABASE_POOL_SIZE: declare('DATABASE_POOL_SIZE')({
    default: '10',
    expected: 'a positive whole number',
    description: 'PostgreSQL connections one process opens at most, all its stores together',
    parse: positiveCount,
  }),
} as const;
