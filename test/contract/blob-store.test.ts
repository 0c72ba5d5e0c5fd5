import { randomUUID } from 'node:crypto';
import { existsSync, readdirSync, utimesSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect } from 'chai';
import { openFileBlobs } from '../../src/media/file-blobs.js';
import { openGridFsBlobs } from '../../src/media/gridfs-blobs.js';
import { openPostgresBlobs } from '../../src/media/postgres-blobs.js';
import { sha256Of } from '../../src/media/hash.js';
import { describeBackend, tempDir } from '../support/adapters.js';
import { describePostgres } from '../support/postgres.js';
import { blobStoreContract } from './blob-store.contract.js';

describe('BlobStore contract', () => {
  describe('on the embedded file adapter', () => {
    blobStoreContract(() => {
      const { dir, remove } = tempDir();
      const blobs = openFileBlobs(join(dir, 'blobs'));
      return Promise.resolve({
        blobs,
        reopen: () => Promise.resolve(openFileBlobs(join(dir, 'blobs'))),
        close: async () => {
          await blobs.close();
          remove();
        },
      });
    });

    describe('its files', () => {
      let dir: string;
      let remove: () => void;
      beforeEach(() => ({ dir, remove } = tempDir()));
      afterEach(() => remove());

      it('are <first two hex digits>/<sha256>, with no temporary file left behind', async () => {
        const blobs = openFileBlobs(join(dir, 'blobs'));
        const bytes = Buffer.from('some image bytes');
        const sha256 = sha256Of(bytes);
        await blobs.put(sha256, bytes, 'image/png');
        expect(existsSync(join(dir, 'blobs', sha256.slice(0, 2), sha256))).to.equal(true);
        expect(readdirSync(join(dir, 'blobs', 'tmp'))).to.deep.equal([]);
      });

      it('lose the temporary files a crash left behind at the next start, and only stale ones', () => {
        const tmp = join(dir, 'blobs', 'tmp');
        openFileBlobs(join(dir, 'blobs'));
        const stale = join(tmp, `${'a'.repeat(64)}.${randomUUID()}.tmp`);
        const fresh = join(tmp, `${'b'.repeat(64)}.${randomUUID()}.tmp`);
        writeFileSync(stale, 'half a blob');
        writeFileSync(fresh, 'a blob being written by another process');
        const twoHoursAgo = new Date(Date.now() - 2 * 3600_000);
        utimesSync(stale, twoHoursAgo, twoHoursAgo);
        openFileBlobs(join(dir, 'blobs'));
        expect(readdirSync(tmp)).to.deep.equal([fresh.slice(tmp.length + 1)]);
      });
    });
  });

  describePostgres('on PostgreSQL', (url) => {
    // Every test stores random bytes, so the run's one table serves them all.
    blobStoreContract(async () => {
      const blobs = await openPostgresBlobs(url);
      return { blobs, reopen: () => openPostgresBlobs(url), close: () => blobs.close() };
    });
  });

  describeBackend('on MongoDB GridFS', 'MONGODB_URL', (url) => {
    blobStoreContract(async () => {
      // A bucket of its own per test: the unique index and the race tests start from nothing.
      const bucketName = `blobs_${randomUUID().replace(/-/g, '').slice(0, 12)}`;
      const blobs = await openGridFsBlobs(url, { bucketName });
      return {
        blobs,
        reopen: () => openGridFsBlobs(url, { bucketName }),
        close: () => blobs.close(),
      };
    });
  });
});
