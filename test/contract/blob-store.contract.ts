import { expect } from 'chai';
import { randomBytes } from 'node:crypto';
import type { BlobStore } from '../../src/media/blob-store.js';
import { sha256Of } from '../../src/media/hash.js';

export interface BlobStoreFixture {
  blobs: BlobStore;
  /** Opens a second store on the same backing storage, as a restarted or second instance would. */
  reopen: () => Promise<BlobStore>;
  close: () => Promise<void>;
}

/** Random bytes with their hash: every test works on blobs no other test (or earlier run) has stored. */
const aBlob = (size = 1024) => {
  const bytes = randomBytes(size);
  return { bytes, sha256: sha256Of(bytes) };
};

export const blobStoreContract = (open: () => Promise<BlobStoreFixture>) => {
  let fixture: BlobStoreFixture;
  let blobs: BlobStore;
  beforeEach(async () => {
    fixture = await open();
    blobs = fixture.blobs;
  });
  afterEach(async () => fixture.close());

  it('gives back exactly the bytes put under their hash', async () => {
    const { bytes, sha256 } = aBlob();
    await blobs.put(sha256, bytes, 'image/png');
    const read = await blobs.get(sha256);
    expect(read).to.be.instanceOf(Buffer);
    expect(Buffer.compare(read!, bytes)).to.equal(0);
  });

  it('answers null for a hash it does not hold', async () => {
    expect(await blobs.get(aBlob().sha256)).to.equal(null);
  });

  it('answers null for a name that is not a hash, never a path outside the store', async () => {
    expect(await blobs.get('../../etc/passwd')).to.equal(null);
    expect(await blobs.get('ABC')).to.equal(null);
  });

  it('keeps blobs of several megabytes whole', async () => {
    const { bytes, sha256 } = aBlob(3 * 1024 * 1024 + 17);
    await blobs.put(sha256, bytes, 'image/jpeg');
    expect(Buffer.compare((await blobs.get(sha256))!, bytes)).to.equal(0);
  });

  it('keeps an empty blob', async () => {
    const bytes = Buffer.alloc(0);
    const sha256 = sha256Of(bytes);
    await blobs.put(sha256, bytes, 'image/png');
    expect((await blobs.get(sha256))?.length).to.equal(0);
  });

  it('treats putting the same bytes again as a no-op', async () => {
    const { bytes, sha256 } = aBlob();
    await blobs.put(sha256, bytes, 'image/webp');
    await blobs.put(sha256, bytes, 'image/webp');
    expect(Buffer.compare((await blobs.get(sha256))!, bytes)).to.equal(0);
  });

  it('survives racing puts of the same bytes', async () => {
    const { bytes, sha256 } = aBlob(600 * 1024);
    await Promise.all([1, 2, 3, 4].map(() => blobs.put(sha256, bytes, 'image/jpeg')));
    expect(Buffer.compare((await blobs.get(sha256))!, bytes)).to.equal(0);
  });

  it('refuses bytes that do not hash to the name given, and stores nothing', async () => {
    const { bytes } = aBlob();
    const other = aBlob().sha256;
    let failed = false;
    try {
      await blobs.put(other, bytes, 'image/png');
    } catch {
      failed = true;
    }
    expect(failed).to.equal(true);
    expect(await blobs.get(other)).to.equal(null);
  });

  it('refuses a name that is not a lower-case hex SHA-256', async () => {
    const bytes = Buffer.from('x');
    for (const name of ['../escape', sha256Of(bytes).toUpperCase(), '']) {
      let failed = false;
      try {
        await blobs.put(name, bytes, 'image/png');
      } catch {
        failed = true;
      }
      expect(failed, name).to.equal(true);
    }
  });

  it('keeps blobs for the next store opened on the same storage', async () => {
    const { bytes, sha256 } = aBlob();
    await blobs.put(sha256, bytes, 'image/png');
    const again = await fixture.reopen();
    try {
      expect(Buffer.compare((await again.get(sha256))!, bytes)).to.equal(0);
    } finally {
      await again.close();
    }
  });

  it('answers ping', async () => {
    await blobs.ping();
  });
};
