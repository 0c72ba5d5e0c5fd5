import { expect } from 'chai';
import { randomBytes } from 'node:crypto';
import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import sharp from 'sharp';
import { sha256Of } from '../../src/media/hash.js';
import { testImage } from '../support/images.js';
import { request as anonymous, startTestServer, withTenant, type TestServer } from '../support/server.js';

const expectProblem = (
  response: { status: number; headers: Headers; body: any },
  status: number,
  type?: string,
) => {
  expect(response.status, JSON.stringify(response.body)).to.equal(status);
  expect(response.headers.get('content-type')).to.match(/^application\/problem\+json/);
  expect(response.body).to.include({ status });
  if (type) expect(response.body.type).to.equal(type);
  expect(response.body.requestId).to.equal(response.headers.get('x-request-id'));
};

/** A picture with a dark and a bright box, different for every `seed`. */
const picture = (format: 'jpeg' | 'png' | 'webp', seed = 0) =>
  testImage({
    width: 1024,
    height: 768,
    format,
    background: 128,
    boxes: [
      { x: 100 + seed, y: 100, width: 200, height: 150, value: 20 },
      { x: 600, y: 400 + seed, width: 120, height: 100, value: 235 },
    ],
  });

describe('the media API', () => {
  let server: TestServer;
  let tenant: string;
  let otherTenant: string;
  /** observations:read and observations:write */
  let key: string;
  let readOnly: string;
  let writeOnly: string;
  let otherKey: string;

  before(async () => {
    // A small limit, so that a real image can exceed it.
    server = await startTestServer({ MEDIA_MAX_BYTES: '50kb', CONSISTENCY_TIMEOUT: '2s' });
    const owner = await withTenant(server, 'acme');
    tenant = owner.tenantId;
    key = await owner.key(['observations:read', 'observations:write']);
    readOnly = await owner.key(['observations:read']);
    writeOnly = await owner.key(['observations:write']);
    const other = await withTenant(server, 'globex');
    otherTenant = other.tenantId;
    otherKey = await other.key(['observations:read', 'observations:write']);
  });
  after(async () => server.close());

  const observations = (tenantId = tenant) => `${server.url}/v1/tenants/${tenantId}/observations`;
  const newObservation = async (tenantId = tenant, apiKey = key) => {
    const created = await anonymous(observations(tenantId), {
      method: 'POST',
      body: { observedAt: '2026-05-01T09:30:00Z', notes: 'with a photo' },
      headers: { 'X-API-Key': apiKey },
    });
    expect(created.status).to.equal(201);
    return `${observations(tenantId)}/${created.body.id as string}`;
  };
  const upload = (
    observation: string,
    bytes: Uint8Array,
    { apiKey = key, headers = {} }: { apiKey?: string; headers?: Record<string, string> } = {},
  ) =>
    anonymous(`${observation}/media`, {
      method: 'POST',
      rawBody: bytes,
      headers: { 'content-type': 'application/octet-stream', 'X-API-Key': apiKey, ...headers },
    });
  const download = (url: string, headers: Record<string, string> = {}) =>
    fetch(url, { headers: { 'X-API-Key': key, ...headers } });
  const readObservation = async (observation: string) =>
    (await anonymous(observation, { headers: { 'X-API-Key': key } })).body;
  const blobFiles = () => {
    const dir = join(server.dataDir, 'blobs');
    return existsSync(dir)
      ? readdirSync(dir)
          .filter((name) => name !== 'tmp')
          .flatMap((shard) => readdirSync(join(dir, shard)))
          .sort()
      : [];
  };

  describe('uploading and reading back', () => {
    for (const format of ['jpeg', 'png', 'webp'] as const) {
      it(`stores a ${format.toUpperCase()} and gives back the same bytes with their type and a strong ETag`, async () => {
        const observation = await newObservation();
        const bytes = await picture(format);
        const sha256 = sha256Of(bytes);
        // The declared type is ignored: the bytes say what they are.
        const response = await upload(observation, bytes, { headers: { 'content-type': 'image/gif' } });
        expect(response.status, JSON.stringify(response.body)).to.equal(201);
        expect(response.body).to.deep.include({
          id: `m_${sha256.slice(0, 26)}`,
          sha256,
          contentType: `image/${format}`,
          size: bytes.length,
          width: 1024,
          height: 768,
        });
        expect(Date.parse(response.body.addedAt as string)).to.be.closeTo(Date.now(), 60_000);
        const location = response.headers.get('location')!;
        expect(location).to.equal(`${new URL(observation).pathname}/media/${response.body.id}`);
        expect(Number(response.headers.get('x-position'))).to.be.greaterThan(0);

        const read = await download(`${server.url}${location}`);
        expect(read.status).to.equal(200);
        expect(read.headers.get('content-type')).to.equal(`image/${format}`);
        expect(read.headers.get('etag')).to.equal(`"${sha256}"`);
        expect(read.headers.get('cache-control')).to.equal('private, max-age=31536000, immutable');
        expect(read.headers.get('x-content-type-options')).to.equal('nosniff');
        const body = Buffer.from(await read.arrayBuffer());
        expect(Buffer.compare(body, bytes)).to.equal(0);

        const again = await download(`${server.url}${location}`, { 'If-None-Match': `"${sha256}"` });
        expect(again.status).to.equal(304);
        expect(again.headers.get('etag')).to.equal(`"${sha256}"`);
        expect((await again.arrayBuffer()).byteLength).to.equal(0);
        // Weak comparison and lists of tags, as RFC 9110 has it; another tag gets the bytes.
        const listed = await download(`${server.url}${location}`, {
          'If-None-Match': `"other", W/"${sha256}"`,
        });
        expect(listed.status).to.equal(304);
        const stale = await download(`${server.url}${location}`, { 'If-None-Match': '"0"' });
        expect(stale.status).to.equal(200);
        await stale.arrayBuffer();
      });
    }

    it('keeps the blob by its hash in DATA_DIR/blobs/<first two hex digits>/<sha256>', async () => {
      const bytes = await picture('png', 7);
      const sha256 = sha256Of(bytes);
      expect((await upload(await newObservation(), bytes)).status).to.equal(201);
      expect(existsSync(join(server.dataDir, 'blobs', sha256.slice(0, 2), sha256))).to.equal(true);
    });

    it('shows the media on the observation, in the list too, and records the event', async () => {
      const observation = await newObservation();
      const jpeg = await picture('jpeg', 1);
      const png = await picture('png', 1);
      const first = await upload(observation, jpeg);
      const second = await upload(observation, png);
      expect([first.status, second.status]).to.deep.equal([201, 201]);
      const read = await readObservation(observation);
      expect(read.version).to.equal(2);
      expect(read.media).to.deep.equal([first.body, second.body]);

      const position = second.headers.get('x-position')!;
      const list = await anonymous(`${observations()}?minPosition=${position}&limit=200`, {
        headers: { 'X-API-Key': key },
      });
      expect(list.status).to.equal(200);
      const listed = (list.body.data as { id: string; media: unknown[] }[]).find(
        (item) => item.id === read.id,
      );
      expect(listed?.media).to.deep.equal([first.body, second.body]);

      const events = await server.stores.eventStore.readStream(`observation-${tenant}_${read.id as string}`);
      const attached = events.filter((event) => event.type === 'ObservationMediaAttached');
      // The event records what was measured; addedAt is the event's time.
      expect(attached.map((event) => event.data)).to.deep.equal(
        [first.body, second.body].map(({ addedAt: _addedAt, ...media }) => ({
          observationId: read.id,
          media,
        })),
      );
    });

    it('answers 200 with the existing item when the same bytes are attached again', async () => {
      const observation = await newObservation();
      const bytes = await picture('webp', 2);
      const first = await upload(observation, bytes);
      const second = await upload(observation, bytes);
      expect(first.status).to.equal(201);
      expect(second.status).to.equal(200);
      expect(second.body).to.deep.equal(first.body);
      expect(second.headers.get('location')).to.equal(first.headers.get('location'));
      expect(second.headers.get('x-position')).to.equal(null);
      const read = await readObservation(observation);
      expect(read.media).to.have.length(1);
      expect(read.version).to.equal(1);
    });

    it('attaches images uploaded to one observation at the same time, each once', async () => {
      const observation = await newObservation();
      const images = await Promise.all([0, 1, 2, 3, 4].map((seed) => picture('jpeg', 10 + seed)));
      const responses = await Promise.all(images.map((bytes) => upload(observation, bytes)));
      expect(responses.map((response) => response.status)).to.deep.equal([201, 201, 201, 201, 201]);
      const read = await readObservation(observation);
      expect((read.media as { sha256: string }[]).map((media) => media.sha256).sort()).to.deep.equal(
        images.map(sha256Of).sort(),
      );
    });

    it('lets another observation attach the same image, which is stored once', async () => {
      const bytes = await picture('png', 3);
      const before = blobFiles().length;
      const a = await upload(await newObservation(), bytes);
      const b = await upload(await newObservation(), bytes);
      expect([a.status, b.status]).to.deep.equal([201, 201]);
      expect(a.body.id).to.equal(b.body.id);
      expect(blobFiles().length).to.equal(before + 1);
    });
  });

  describe('refusals, which write nothing', () => {
    /** Asserts that the request changed no event, no observation and no blob. */
    const expectNothingWritten = async (observation: string, act: () => Promise<void>) => {
      const head = await server.stores.eventStore.headPosition();
      const before = await readObservation(observation);
      const blobs = blobFiles();
      await act();
      expect(await server.stores.eventStore.headPosition()).to.equal(head);
      expect(await readObservation(observation)).to.deep.equal(before);
      expect(blobFiles()).to.deep.equal(blobs);
    };

    it('answers 415 to a text file sent as image/jpeg', async () => {
      const observation = await newObservation();
      await expectNothingWritten(observation, async () => {
        const response = await upload(observation, Buffer.from('not an image at all\n'.repeat(20)), {
          headers: { 'content-type': 'image/jpeg' },
        });
        expectProblem(response, 415, '/problems/unsupported-media-type');
      });
    });

    it('answers 415 to a truncated JPEG, PNG or WebP', async () => {
      const observation = await newObservation();
      for (const format of ['jpeg', 'png', 'webp'] as const) {
        const whole = await picture(format, 4);
        await expectNothingWritten(observation, async () => {
          const response = await upload(observation, whole.subarray(0, Math.floor(whole.length * 0.8)), {
            headers: { 'content-type': `image/${format}` },
          });
          expectProblem(response, 415, '/problems/unsupported-media-type');
        });
      }
    });

    it('answers 415 to a GIF, a format it does not keep', async () => {
      const observation = await newObservation();
      const gif = await sharp({ create: { width: 8, height: 8, channels: 3, background: '#444' } })
        .gif()
        .toBuffer();
      await expectNothingWritten(observation, async () => {
        expectProblem(await upload(observation, gif), 415, '/problems/unsupported-media-type');
      });
    });

    it('answers 415 to a compressed body', async () => {
      const observation = await newObservation();
      await expectNothingWritten(observation, async () => {
        const response = await upload(observation, await picture('jpeg'), {
          headers: { 'content-encoding': 'gzip' },
        });
        expectProblem(response, 415, '/problems/unsupported-media-type');
      });
    });

    it('answers 415 to an empty body', async () => {
      const observation = await newObservation();
      await expectNothingWritten(observation, async () => {
        expectProblem(await upload(observation, Buffer.alloc(0)), 415);
      });
    });

    it('answers 413 to an image over MEDIA_MAX_BYTES', async () => {
      const observation = await newObservation();
      // Noise does not compress: 200x200 pixels of it is a PNG of about 120 kB, over the 50 kB limit.
      const noisy = await sharp(randomBytes(200 * 200 * 3), { raw: { width: 200, height: 200, channels: 3 } })
        .png()
        .toBuffer();
      expect(noisy.length).to.be.greaterThan(50 * 1024);
      await expectNothingWritten(observation, async () => {
        expectProblem(await upload(observation, noisy), 413, '/problems/payload-too-large');
      });
    });

    it('answers 404 to an upload to an observation that does not exist', async () => {
      const response = await upload(`${observations()}/o_00000000000000000000000000`, await picture('png'));
      expectProblem(response, 404, '/problems/not-found');
    });

    it("answers 404 to another tenant's credential, for uploads and reads", async () => {
      const observation = await newObservation();
      const stored = await upload(observation, await picture('jpeg', 5));
      expect(stored.status).to.equal(201);
      const other = await upload(observation, await picture('jpeg', 6), { apiKey: otherKey });
      expectProblem(other, 404);
      const read = await fetch(`${server.url}${stored.headers.get('location')}`, {
        headers: { 'X-API-Key': otherKey },
      });
      expect(read.status).to.equal(404);
      expect(read.headers.get('content-type')).to.match(/^application\/problem\+json/);
      // The same observation id under the other tenant's own path is no observation of theirs.
      const id = new URL(observation).pathname.split('/').at(-1)!;
      const underTheirs = await download(
        `${observations(otherTenant)}/${id}/media/${stored.body.id as string}`,
        { 'X-API-Key': otherKey },
      );
      expect(underTheirs.status).to.equal(404);
      expect((await readObservation(observation)).media).to.have.length(1);
    });

    it('answers 404 to an unknown media id or observation', async () => {
      const observation = await newObservation();
      const unknownMedia = await download(`${observation}/media/m_00000000000000000000000000`);
      expect(unknownMedia.status).to.equal(404);
      expect(unknownMedia.headers.get('content-type')).to.match(/^application\/problem\+json/);
      const stored = await upload(observation, await picture('webp', 8));
      const mediaId = stored.body.id as string;
      const unknownObservation = await download(
        `${observations()}/o_00000000000000000000000000/media/${mediaId}`,
      );
      expect(unknownObservation.status).to.equal(404);
      // A medium of one observation is not a medium of another, even within the tenant.
      const elsewhere = await download(`${await newObservation()}/media/${mediaId}`);
      expect(elsewhere.status).to.equal(404);
    });
  });

  describe('scopes', () => {
    it('needs observations:write to upload and observations:read to read', async () => {
      const observation = await newObservation();
      const bytes = await picture('jpeg', 9);
      const refused = await upload(observation, bytes, { apiKey: readOnly });
      expectProblem(refused, 403, '/problems/forbidden');
      expect(refused.body.requiredScope).to.equal('observations:write');
      const stored = await upload(observation, bytes, { apiKey: writeOnly });
      expect(stored.status).to.equal(201);
      const location = `${server.url}${stored.headers.get('location')}`;
      const unread = await anonymous(location, { headers: { 'X-API-Key': writeOnly } });
      expectProblem(unread, 403, '/problems/forbidden');
      expect(unread.body.requiredScope).to.equal('observations:read');
      const read = await fetch(location, { headers: { 'X-API-Key': readOnly } });
      expect(read.status).to.equal(200);
      expect(Buffer.compare(Buffer.from(await read.arrayBuffer()), bytes)).to.equal(0);
    });

    it('answers 401 without credentials', async () => {
      const observation = await newObservation();
      const response = await anonymous(`${observation}/media`, {
        method: 'POST',
        rawBody: await picture('png'),
      });
      expectProblem(response, 401, '/problems/unauthorized');
    });
  });
});
