import { expect } from 'chai';
import { randomUUID } from 'node:crypto';
import { statSync } from 'node:fs';
import { join } from 'node:path';
import { MongoClient } from 'mongodb';
import pg from 'pg';
import {
  openMongoFailureStore,
  openPostgresFailureStore,
  openSqliteFailureStore,
} from '../../src/auth/failure-store.js';
import { databaseName } from '../../src/mongodb/client.js';
import { describeBackend, tempDir } from '../support/adapters.js';
import { describePostgres } from '../support/postgres.js';
import { failureStoreContract } from './failure-store.contract.js';

describe('FailureLimiterStore contract', () => {
  describe('on the embedded SQLite adapter', () => {
    failureStoreContract(() => {
      const { dir, remove } = tempDir();
      const file = join(dir, 'limits.db');
      const store = openSqliteFailureStore(file);
      return Promise.resolve({
        store,
        second: () => Promise.resolve(openSqliteFailureStore(file)),
        close: async () => {
          await store.close();
          remove();
        },
      });
    });

    it('creates limits.db for the owner alone (0600)', async () => {
      const { dir, remove } = tempDir();
      const file = join(dir, 'limits.db');
      const store = openSqliteFailureStore(file);
      try {
        await store.limiter({ name: 'mode', max: 1, windowMs: 1000 }).take('k');
        for (const path of [file, `${file}-wal`]) {
          expect((statSync(path).mode & 0o777).toString(8), path).to.equal('600');
        }
      } finally {
        await store.close();
        remove();
      }
    });
  });

  describePostgres('on PostgreSQL', (url) => {
    // The run's one table: each test starts from no counters.
    failureStoreContract(async () => {
      const store = await openPostgresFailureStore(url);
      const pool = new pg.Pool({ connectionString: url, max: 1 });
      await pool.query('DELETE FROM auth_failures');
      return {
        store,
        second: () => openPostgresFailureStore(url),
        close: async () => {
          await pool.end();
          await store.close();
        },
      };
    });
  });

  describeBackend('on MongoDB', 'MONGODB_URL', (url) => {
    // Each test runs in a database of its own, dropped afterwards.
    failureStoreContract(async () => {
      const scoped = url.replace(
        /(mongodb(?:\+srv)?:\/\/[^/?]*)\/?[^?]*/,
        `$1/failures_${randomUUID().slice(0, 8)}`,
      );
      const store = await openMongoFailureStore(scoped);
      return {
        store,
        second: () => openMongoFailureStore(scoped),
        close: async () => {
          await store.close();
          const client = new MongoClient(scoped);
          try {
            await client.db(databaseName(scoped)).dropDatabase();
          } finally {
            await client.close();
          }
        },
      };
    });
  });
});
