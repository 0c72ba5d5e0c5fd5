import { expect } from 'chai';
import sharp from 'sharp';
import { cvTenant } from '../support/cv.js';
import { testImage } from '../support/images.js';
import { startTestServer, withTenant, type TestServer } from '../support/server.js';
import { eventually } from '../support/wait.js';

/** Three dark stones on a light ground: object-proposals finds three. */
const threeDark = [
  { x: 100, y: 120, width: 100, height: 80, value: 30 },
  { x: 400, y: 300, width: 100, height: 80, value: 30 },
  { x: 500, y: 60, width: 80, height: 80, value: 30 },
];
const photo = () => testImage({ width: 640, height: 480, format: 'jpeg', background: 210, boxes: threeDark });

describe('what was seen, over HTTP: thumbnails and the latest detections in the list', () => {
  let server: TestServer;
  let t: ReturnType<typeof cvTenant>;
  let other: ReturnType<typeof cvTenant>;
  let key: string;
  let otherKey: string;
  let observationId: string;
  let mediaId: string;
  let sha256: string;

  before(async () => {
    server = await startTestServer({ CONSISTENCY_TIMEOUT: '5s' });
    const scopes = ['cv:read', 'cv:write', 'observations:write', 'observations:read'];
    const tenant = await withTenant(server, 'seenacme');
    key = await tenant.key(scopes);
    t = cvTenant(server.url, server.stores, tenant.tenantId, key);
    const second = await withTenant(server, 'seenother');
    otherKey = await second.key(scopes);
    other = cvTenant(server.url, server.stores, second.tenantId, otherKey);
    observationId = await t.observe('three stones');
    ({ id: mediaId, sha256 } = await t.upload(observationId, await photo()));
  });
  after(async () => server.close());

  const thumbnail = (width: string | null, headers: Record<string, string> = {}, apiKey = key) =>
    fetch(
      `${server.url}/v1/tenants/${t.tenantId}/observations/${observationId}/media/${mediaId}/thumbnail` +
        (width === null ? '' : `?width=${width}`),
      { headers: { 'X-API-Key': apiKey, ...headers } },
    );

  describe('a thumbnail', () => {
    for (const width of [160, 320, 640]) {
      it(`is a WebP ${width} pixels wide, in proportion, with an ETag of the hash and the width`, async () => {
        const response = await thumbnail(String(width));
        expect(response.status).to.equal(200);
        expect(response.headers.get('content-type')).to.equal('image/webp');
        expect(response.headers.get('etag')).to.equal(`"${sha256}-w${width}"`);
        expect(response.headers.get('cache-control')).to.equal('private, max-age=31536000, immutable');
        const metadata = await sharp(Buffer.from(await response.arrayBuffer())).metadata();
        expect(metadata).to.include({ format: 'webp', width, height: (width * 480) / 640 });
      });
    }

    it('is 160 pixels wide when no width is asked for', async () => {
      const response = await thumbnail(null);
      expect(response.headers.get('etag')).to.equal(`"${sha256}-w160"`);
      expect((await sharp(Buffer.from(await response.arrayBuffer())).metadata()).width).to.equal(160);
    });

    it('answers 304 to If-None-Match with its ETag, and 200 to another width’s', async () => {
      const notModified = await thumbnail('320', { 'If-None-Match': `"${sha256}-w320"` });
      expect(notModified.status).to.equal(304);
      expect(notModified.headers.get('etag')).to.equal(`"${sha256}-w320"`);
      const other = await thumbnail('320', { 'If-None-Match': `"${sha256}-w160"` });
      expect(other.status).to.equal(200);
    });

    for (const width of ['100', '1000', 'big', '160&width=320']) {
      it(`answers 400 problem+json naming width to width=${width}`, async () => {
        const response = await thumbnail(width);
        expect(response.status).to.equal(400);
        expect(response.headers.get('content-type')).to.match(/^application\/problem\+json/);
        expect(JSON.stringify(await response.json())).to.include('width');
      });
    }

    it("answers 404 to another tenant's key, and for an unknown medium", async () => {
      const response = await thumbnail('160', {}, otherKey);
      expect(response.status).to.be.oneOf([403, 404]);
      const elsewhere = await fetch(
        `${server.url}/v1/tenants/${other.tenantId}/observations/${observationId}/media/${mediaId}/thumbnail`,
        { headers: { 'X-API-Key': otherKey } },
      );
      expect(elsewhere.status).to.equal(404);
      expect(elsewhere.headers.get('content-type')).to.match(/^application\/problem\+json/);
      const unknown = await fetch(
        `${server.url}/v1/tenants/${t.tenantId}/observations/${observationId}/media/m_${'0'.repeat(26)}/thumbnail`,
        { headers: { 'X-API-Key': key } },
      );
      expect(unknown.status).to.equal(404);
    });
  });

  describe('the list', () => {
    const listed = async () => {
      const response = await t.api('/observations?limit=200');
      expect(response.status).to.equal(200);
      return (response.body.data as { id: string; latestDetections?: unknown }[]).find(
        (o) => o.id === observationId,
      )!;
    };

    it('has no latestDetections before a job has found something', async () => {
      expect(await listed()).not.to.have.property('latestDetections');
    });

    it('gives the labels of the latest completed job that found something, counted, and keeps them', async () => {
      const job = await t.submit({ observationId, model: 'object-proposals' });
      const done = await t.finished(job.id);
      expect(done.status).to.equal('completed');
      // object-proposals names what it finds by its polarity: one label for the three stones.
      const labels = (done.result.detections as { label: string }[]).map((d) => d.label);
      expect(new Set(labels).size).to.equal(1);
      const expected = {
        jobId: job.id,
        model: 'object-proposals',
        finishedAt: done.finishedAt,
        labels: [{ label: labels[0], count: 3 }],
      };
      await eventually(async () => expect((await listed()).latestDetections).to.deep.equal(expected));
      // An image-quality job finds no objects: the list still says what was seen.
      const quality = await t.submit({ observationId, model: 'image-quality' });
      await t.finished(quality.id);
      const patched = await t.api(`/observations/${observationId}`, {
        method: 'PATCH',
        body: { notes: 'three dark stones' },
        headers: { 'content-type': 'application/merge-patch+json' },
      });
      expect(patched.status).to.equal(200);
      const position = patched.headers.get('x-position');
      const after = await t.api(`/observations?limit=200&minPosition=${position}`);
      const row = (after.body.data as { id: string; notes: string; latestDetections: unknown }[]).find(
        (o) => o.id === observationId,
      )!;
      expect(row.notes).to.equal('three dark stones');
      expect(row.latestDetections).to.deep.equal(expected);
    });
  });
});
