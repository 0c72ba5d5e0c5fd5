import { expect } from 'chai';
import { randomUUID } from 'node:crypto';
import { chmodSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { MongoClient } from 'mongodb';
import { openMongoIdempotencyStore } from '../../src/http/idempotency-store-mongo.js';
import { openPostgresIdempotencyStore } from '../../src/http/idempotency-store-postgres.js';
import { openSqliteIdempotencyStore } from '../../src/http/idempotency-store-sqlite.js';
import { databaseName } from '../../src/mongodb/client.js';
import { describeBackend, tempDir } from '../support/adapters.js';
import { describePostgres } from '../support/postgres.js';
import { idempotencyStoreContract } from './idempotency-store.contract.js';

describe('IdempotencyStore contract', () => {
  describe('on the embedded SQLite adapter', () => {
    idempotencyStoreContract(() => {
      const { dir, remove } = tempDir();
      const file = join(dir, 'idempotency.db');
      const store = openSqliteIdempotencyStore(file);
      return Promise.resolve({
        store,
        reopen: () => Promise.resolve(openSqliteIdempotencyStore(file)),
        close: async () => {
          await store.close();
          remove();
        },
      });
    });

    const modeOf = (file: string) => (statSync(file).mode & 0o777).toString(8);

    it('creates idempotency.db and its -wal and -shm for the owner alone (0600)', async () => {
      const { dir, remove } = tempDir();
      const file = join(dir, 'idempotency.db');
      const store = openSqliteIdempotencyStore(file);
      try {
        await store.claim({ scope: 't_a|apikey:k_1', key: 'k' }, 0, 1000);
        for (const path of [file, `${file}-wal`, `${file}-shm`]) expect(modeOf(path), path).to.equal('600');
      } finally {
        await store.close();
        remove();
      }
    });

    it('narrows files an older version left readable by others to 0600 when it opens them', async () => {
      const { dir, remove } = tempDir();
      const file = join(dir, 'idempotency.db');
      await openSqliteIdempotencyStore(file).close();
      for (const path of [file, `${file}-wal`, `${file}-shm`]) {
        writeFileSync(path, '', { flag: 'a' });
        chmodSync(path, 0o644);
      }
      const store = openSqliteIdempotencyStore(file);
      try {
        for (const path of [file, `${file}-wal`, `${file}-shm`]) expect(modeOf(path), path).to.equal('600');
      } finally {
        await store.close();
        remove();
      }
    });
  });

  describePostgres('on PostgreSQL', (url) => {
    // Every test uses keys of its own, so the run's one table serves them all.
    idempotencyStoreContract(async () => {
      const store = await openPostgresIdempotencyStore(url);
      return { store, reopen: () => openPostgresIdempotencyStore(url), close: () => store.close() };
    });
  });

  describeBackend('on MongoDB', 'MONGODB_URL', (url) => {
    const collections: string[] = [];
    after(async () => {
      const client = new MongoClient(url);
      try {
        const db = client.db(databaseName(url));
        await Promise.all(
          collections.map((name) =>
            db
              .collection(name)
              .drop()
              .catch(() => undefined),
          ),
        );
      } finally {
        await client.close();
      }
    });

    idempotencyStoreContract(async () => {
      // A collection of its own per test: the race tests start from nothing.
      const collectionName = `idempotency_${randomUUID().replace(/-/g, '').slice(0, 12)}`;
      collections.push(collectionName);
      const store = await openMongoIdempotencyStore(url, { collectionName });
      return {
        store,
        reopen: () => openMongoIdempotencyStore(url, { collectionName }),
        close: () => store.close(),
      };
    });

    it('expires records with a TTL index on expiresAt and keys them uniquely by scope and key', async () => {
      const collectionName = `idempotency_${randomUUID().replace(/-/g, '').slice(0, 12)}`;
      collections.push(collectionName);
      const store = await openMongoIdempotencyStore(url, { collectionName });
      const client = new MongoClient(url);
      try {
        const indexes = await client.db(databaseName(url)).collection(collectionName).indexes();
        expect(indexes.find((index) => index.name === 'expiresAt_ttl')).to.deep.include({
          key: { expiresAt: 1 },
          expireAfterSeconds: 0,
        });
        expect(indexes.find((index) => index.name === 'scope_key_unique')).to.deep.include({
          key: { scope: 1, key: 1 },
          unique: true,
        });
      } finally {
        await client.close();
        await store.close();
      }
    });
  });
});
