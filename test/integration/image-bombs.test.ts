import { expect } from 'chai';
import { readFileSync, writeFileSync } from 'node:fs';
import sharp from 'sharp';
import { cvTenant } from '../support/cv.js';
import { request as anonymous, startTestServer, withTenant, type TestServer } from '../support/server.js';

/**
 * Issue 11, finding 2: a small file that decodes to hundreds of megabytes, decodes that starve password
 * hashing, and bytes decoded again though they are already known.
 */

/** Width × height of 16-bit RGBA (8 bytes a pixel), all zeros: a PNG of a few hundred KB. */
const deepPng = (width: number, height: number, seed = 0) => {
  const raw = Buffer.alloc(width * height * 4 * 2);
  raw.writeUInt32BE(seed, 0);
  return sharp(raw, { raw: { width, height, channels: 4 } })
    .toColourspace('rgb16')
    .png({ compressionLevel: 9 })
    .toBuffer();
};

const statusBytes = (field: string) =>
  Number(new RegExp(`${field}:\\s+(\\d+)`).exec(readFileSync('/proc/self/status', 'utf8'))![1]) * 1024;
const rssBytes = () => statusBytes('VmRSS');
const peakRssBytes = () => statusBytes('VmHWM');

/** Counts the calls of one method of every sharp instance in this process (the service runs in it). */
const spyOn = (method: 'metadata' | 'toBuffer' | 'stats') => {
  const prototype = sharp.prototype as unknown as Record<string, (...args: unknown[]) => unknown>;
  const original = prototype[method]!;
  const spy = { calls: 0, restore: () => (prototype[method] = original) };
  prototype[method] = function (this: unknown, ...args: unknown[]) {
    spy.calls += 1;
    return original.apply(this, args);
  };
  return spy;
};

describe('image bombs', function () {
  this.timeout(60_000);
  let server: TestServer;
  let tenantId: string;
  let key: string;
  let bomb: Buffer;

  before(async () => {
    server = await startTestServer({ CONSISTENCY_TIMEOUT: '2s', RATE_LIMIT: 'off' });
    const owner = await withTenant(server, 'bombs');
    tenantId = owner.tenantId;
    key = await owner.key(['observations:read', 'observations:write', 'cv:read', 'cv:write']);
    bomb = await deepPng(7000, 7000);
  });
  after(async () => server.close());

  const t = () => cvTenant(server.url, server.stores, tenantId, key);
  const upload = (observationId: string, bytes: Uint8Array) =>
    anonymous(`${server.url}/v1/tenants/${tenantId}/observations/${observationId}/media`, {
      method: 'POST',
      rawBody: bytes,
      headers: { 'content-type': 'application/octet-stream', 'X-API-Key': key },
    });

  describe('the decode budget, checked from the header', () => {
    it('refuses a 381 KB PNG of 7000 × 7000 16-bit RGBA with 413 naming the limit, fast, without decoding it', async () => {
      expect(bomb.length).to.be.below(400_000);
      const observationId = await t().observe('a bomb');
      const decodes = spyOn('toBuffer');
      const headers = spyOn('metadata');
      const rssBefore = rssBytes();
      const started = performance.now();
      try {
        const response = await upload(observationId, bomb);
        const ms = performance.now() - started;
        expect(response.status, JSON.stringify(response.body)).to.equal(413);
        expect(response.body.type).to.equal('/problems/payload-too-large');
        expect(response.body.detail).to.include('7,000 × 7,000 pixels').and.include('MEDIA_MAX_PIXELS');
        // Loose: speed belongs in the bench (bench/images.ts); a decode takes seconds on this machine.
        expect(ms).to.be.below(2000);
        expect(decodes.calls, 'decodes').to.equal(0);
        expect(headers.calls, 'sharp metadata reads').to.equal(0);
        // Decoded, it would be 392 MB.
        expect(rssBytes() - rssBefore).to.be.below(50 * 1024 * 1024);
      } finally {
        decodes.restore();
        headers.restore();
      }
      expect((await t().api(`/observations/${observationId}`)).body.media).to.deep.equal([]);
    });

    it('refuses 16-bit RGBA under the pixel limit but over the decoded-bytes limit, naming MEDIA_MAX_DECODED_BYTES', async () => {
      const observationId = await t().observe('deep');
      // 5001 × 4000 = 20 MP, well under 40 MP; at 8 bytes a pixel 160,032,000 bytes decoded.
      const response = await upload(observationId, await deepPng(5001, 4000));
      expect(response.status, JSON.stringify(response.body)).to.equal(413);
      expect(response.body.detail).to.include('5,001 × 4,000 pixels').and.include('MEDIA_MAX_DECODED_BYTES');
    });

    it('accepts the largest 16-bit RGBA image within the budget (5000 × 4000: 160,000,000 bytes decoded)', async () => {
      const observationId = await t().observe('deep but allowed');
      const response = await upload(observationId, await deepPng(5000, 4000, 1));
      expect(response.status, JSON.stringify(response.body)).to.equal(201);
      expect(response.body).to.include({ contentType: 'image/png', width: 5000, height: 4000 });
    });
  });

  describe('WebP, which libvips reads a frame of whole', () => {
    it('checks four 1.6 KB WebP uploads of 6300 × 6300 RGBA at once in far less than their 159 MB each', async () => {
      const webp = await sharp(Buffer.alloc(6300 * 6300 * 4), {
        raw: { width: 6300, height: 6300, channels: 4 },
      })
        .webp({ lossless: true })
        .toBuffer();
      expect(webp.length).to.be.below(4096);
      const observationIds = await Promise.all([1, 2, 3, 4].map((i) => t().observe(`webp ${i}`)));
      // The peak is what matters: VmHWM, reset to the current size first.
      writeFileSync('/proc/self/clear_refs', '5');
      const rssBefore = rssBytes();
      const responses = await Promise.all(observationIds.map((id) => upload(id, webp)));
      const peakGrowth = peakRssBytes() - rssBefore;
      for (const response of responses) {
        expect(response.status, JSON.stringify(response.body)).to.equal(201);
        expect(response.body).to.include({ contentType: 'image/webp', width: 6300, height: 6300 });
      }
      // Decoded whole they took 300 MB each and more (608 MiB of RSS for four through the service).
      expect(peakGrowth).to.be.below(150 * 1024 * 1024);
    });
  });

  describe('bytes already known', () => {
    it('are not decoded again when attached again to the same observation, or to another of the tenant', async () => {
      const bytes = await sharp({ create: { width: 640, height: 480, channels: 3, background: '#456' } })
        .jpeg()
        .toBuffer();
      const observationId = await t().observe('twice');
      expect((await upload(observationId, bytes)).status).to.equal(201);
      const decodes = spyOn('toBuffer');
      const headers = spyOn('metadata');
      try {
        const again = await upload(observationId, bytes);
        expect(again.status).to.equal(200);
        const elsewhere = await upload(await t().observe('elsewhere'), bytes);
        expect(elsewhere.status).to.equal(201);
        expect(elsewhere.body).to.include({ width: 640, height: 480, contentType: 'image/jpeg' });
        expect([decodes.calls, headers.calls]).to.deep.equal([0, 0]);
      } finally {
        decodes.restore();
        headers.restore();
      }
    });
  });

  describe('CV jobs', () => {
    it('take the size and orientation from the header, with no metadata read, and decode once in the queue', async () => {
      // Stored 400 × 300, displayed 300 × 400 (EXIF orientation 6).
      const bytes = await sharp({ create: { width: 400, height: 300, channels: 3, background: '#777' } })
        .jpeg()
        .withMetadata({ orientation: 6 })
        .toBuffer();
      const observationId = await t().observe('rotated');
      expect((await upload(observationId, bytes)).status).to.equal(201);
      const headers = spyOn('metadata');
      const decodedBefore = server.service.decodes.status().decoded;
      try {
        const job = await t().submit({ observationId, model: 'image-quality' });
        const done = await t().finished(job.id);
        expect(done.status, JSON.stringify(done.error)).to.equal('completed');
        expect(done.result.summary.resolution).to.include({ width: 300, height: 400 });
        expect(headers.calls).to.equal(0);
        expect(server.service.decodes.status().decoded - decodedBefore).to.equal(1);
      } finally {
        headers.restore();
      }
    });

    it('refuse an image stored under an older, larger budget with media_unreadable naming the limit', async () => {
      const observationId = await t().observe('an old bomb');
      await t().attachDirectly(observationId, bomb, { contentType: 'image/png' });
      const decodes = spyOn('toBuffer');
      try {
        const job = await t().submit({ observationId, model: 'object-proposals' });
        const done = await t().finished(job.id);
        expect(done.status).to.equal('failed');
        expect(done.error.code).to.equal('media_unreadable');
        expect(done.error.message).to.include('MEDIA_MAX_PIXELS');
        expect(decodes.calls).to.equal(0);
      } finally {
        decodes.restore();
      }
    });
  });
});

describe('the decode queue', function () {
  this.timeout(60_000);
  let server: TestServer;

  before(async () => {
    server = await startTestServer({
      MEDIA_DECODE_CONCURRENCY: '1',
      MEDIA_DECODE_QUEUE: '1',
      RATE_LIMIT: 'off',
    });
  });
  after(async () => server.close());

  it('answers 503 with Retry-After to uploads beyond MEDIA_DECODE_QUEUE waiting, and decodes the rest', async () => {
    const owner = await withTenant(server, 'queue');
    const key = await owner.key(['observations:read', 'observations:write']);
    const t = cvTenant(server.url, server.stores, owner.tenantId, key);
    const observationId = await t.observe('many at once');
    // Distinct images of 20 MP each, a few hundred ms of decoding apiece: one decodes, one waits.
    const images = await Promise.all([0, 1, 2, 3, 4, 5].map((seed) => deepPng(5000, 4000, seed + 10)));
    const responses = await Promise.all(
      images.map((bytes) =>
        anonymous(`${server.url}/v1/tenants/${owner.tenantId}/observations/${observationId}/media`, {
          method: 'POST',
          rawBody: bytes,
          headers: { 'content-type': 'application/octet-stream', 'X-API-Key': key },
        }),
      ),
    );
    const statuses = responses.map((response) => response.status);
    expect(statuses.filter((status) => status === 201).length, String(statuses)).to.be.at.least(2);
    const refused = responses.filter((response) => response.status === 503);
    expect(refused.length, String(statuses)).to.be.at.least(1);
    for (const response of refused) {
      expect(response.body.type).to.equal('/problems/unavailable');
      expect(response.body.detail).to.include('MEDIA_DECODE_QUEUE=1');
      expect(Number(response.headers.get('retry-after'))).to.be.at.least(1);
    }
    expect(server.service.decodes.status()).to.include({ running: 0, waiting: 0 });
  });
});
