import { expect } from 'chai';
import sharp from 'sharp';
import { PayloadTooLargeError, UnavailableError, UnsupportedMediaTypeError } from '../../src/core/errors.js';
import { ConfigError, loadConfig } from '../../src/config.js';
import { decodeQueue } from '../../src/media/decode-queue.js';
import { mediaIdOf, sha256Of } from '../../src/media/hash.js';
import { readHeader } from '../../src/media/header.js';
import { measure, sniff } from '../../src/media/images.js';
import { testImage } from '../support/images.js';

const refusal = async (work: Promise<unknown>) => {
  try {
    await work;
  } catch (error) {
    return error;
  }
  throw new Error('expected a refusal');
};

describe('images', () => {
  describe('sniff', () => {
    it('knows JPEG, PNG and WebP by their magic numbers', async () => {
      for (const format of ['jpeg', 'png', 'webp'] as const) {
        const bytes = await testImage({ width: 8, height: 8, format });
        expect(sniff(bytes), format).to.equal(`image/${format}`);
      }
    });

    it('knows the signatures alone, whatever follows', () => {
      expect(sniff(Buffer.from([0xff, 0xd8, 0xff, 0xe0]))).to.equal('image/jpeg');
      expect(sniff(Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]))).to.equal('image/png');
      expect(sniff(Buffer.from('RIFF\x10\x00\x00\x00WEBPVP8 ', 'latin1'))).to.equal('image/webp');
    });

    it('answers null for text, other images, other RIFF files, short and empty bodies', async () => {
      const gif = await sharp({ create: { width: 4, height: 4, channels: 3, background: '#888' } })
        .gif()
        .toBuffer();
      for (const bytes of [
        Buffer.from('hello, I am a text file pretending to be a JPEG\n'),
        gif,
        Buffer.from('RIFF\x10\x00\x00\x00WAVEfmt ', 'latin1'),
        Buffer.from([0xff, 0xd8]),
        Buffer.from([0x89, 0x50, 0x4e, 0x47]),
        Buffer.from('RIFF', 'latin1'),
        Buffer.alloc(0),
      ]) {
        expect(sniff(bytes), bytes.toString('latin1').slice(0, 12)).to.equal(null);
      }
    });
  });

  describe('measure', () => {
    it('answers the sniffed type and the decoded width and height', async () => {
      for (const format of ['jpeg', 'png', 'webp'] as const) {
        const bytes = await testImage({ width: 1024, height: 768, format, boxes: [] });
        expect(await measure(bytes), format).to.deep.equal({
          contentType: `image/${format}`,
          width: 1024,
          height: 768,
        });
      }
    });

    it('refuses a truncated JPEG, PNG or WebP with 415, though its header is intact', async () => {
      for (const format of ['jpeg', 'png', 'webp'] as const) {
        const whole = await testImage({
          width: 320,
          height: 240,
          format,
          boxes: [{ x: 10, y: 10, width: 100, height: 80, value: 10 }],
          blur: 2,
        });
        for (const keep of [whole.length - 2, Math.floor(whole.length * 0.9), Math.floor(whole.length / 2)]) {
          const error = await refusal(measure(whole.subarray(0, keep)));
          expect(error, `${format} cut at ${keep}`).to.be.instanceOf(UnsupportedMediaTypeError);
        }
      }
    });

    it('refuses bytes that are no image with 415', async () => {
      const error = await refusal(measure(Buffer.from('just text')));
      expect(error).to.be.instanceOf(UnsupportedMediaTypeError);
      expect((error as Error).message).to.match(/JPEG, PNG or WebP/);
    });

    it('refuses a body that starts like one format and is another', async () => {
      const png = await testImage({ width: 16, height: 16, format: 'png' });
      const jpegHeaderOnPng = Buffer.concat([Buffer.from([0xff, 0xd8, 0xff]), png]);
      expect(await refusal(measure(jpegHeaderOnPng))).to.be.instanceOf(UnsupportedMediaTypeError);
    });

    it('accepts bytes after the end of a complete JPEG', async () => {
      const jpeg = await testImage({ width: 16, height: 16, format: 'jpeg' });
      const measured = await measure(Buffer.concat([jpeg, Buffer.from('trailer')]));
      expect(measured).to.deep.equal({ contentType: 'image/jpeg', width: 16, height: 16 });
    });

    it('refuses an image with more pixels than allowed with 413, before decoding it', async () => {
      const bytes = await testImage({ width: 200, height: 100, format: 'png' });
      const error = await refusal(measure(bytes, { maxPixels: 19_999 }));
      expect(error).to.be.instanceOf(PayloadTooLargeError);
      expect(await measure(bytes, { maxPixels: 20_000 })).to.include({ width: 200, height: 100 });
    });
  });

  describe('readHeader', () => {
    it('reads the size, channels, bits and orientation sharp finds, for every type we keep', async () => {
      const cases = [
        { channels: 3, format: 'jpeg', orientation: 6 },
        { channels: 1, format: 'jpeg', orientation: 1 },
        { channels: 3, format: 'png', orientation: 8 },
        { channels: 4, format: 'png', orientation: 1 },
        { channels: 4, format: 'png', deep: true, orientation: 3 },
        { channels: 1, format: 'png', palette: true, orientation: 1 },
        { channels: 3, format: 'webp', orientation: 5 },
        { channels: 4, format: 'webp', lossless: true, orientation: 1 },
        { channels: 3, format: 'webp', lossless: true, orientation: 7 },
      ] as const;
      for (const c of cases) {
        const width = 37;
        const height = 23;
        const raw = Buffer.alloc(width * height * c.channels, 90);
        raw[0] = 200;
        let image = sharp(raw, { raw: { width, height, channels: c.channels } });
        if ('deep' in c) image = image.toColourspace('rgb16');
        if (c.orientation !== 1) image = image.withMetadata({ orientation: c.orientation });
        const bytes = await (
          c.format === 'jpeg'
            ? image.jpeg()
            : c.format === 'png'
              ? image.png({ palette: 'palette' in c })
              : image.webp({ lossless: 'lossless' in c })
        ).toBuffer();
        const meta = await sharp(bytes).metadata();
        const header = readHeader(bytes, `image/${c.format}`);
        expect(header, JSON.stringify(c)).to.deep.equal({
          contentType: `image/${c.format}`,
          width: meta.width,
          height: meta.height,
          channels: meta.channels,
          bitsPerSample: meta.depth === 'ushort' ? 16 : 8,
          orientation: meta.orientation ?? 1,
        });
      }
    });

    it('answers null for a header cut short, instead of reading past the end', async () => {
      for (const format of ['jpeg', 'png', 'webp'] as const) {
        const whole = await testImage({ width: 16, height: 16, format });
        expect(readHeader(whole.subarray(0, 14), `image/${format}`), format).to.equal(null);
      }
    });
  });

  describe('the decode budget', () => {
    const deep = (width: number, height: number) =>
      sharp(Buffer.alloc(width * height * 8), { raw: { width, height, channels: 4 } })
        .toColourspace('rgb16')
        .png()
        .toBuffer();

    it('refuses by pixels (MEDIA_MAX_PIXELS) and by decoded bytes (MEDIA_MAX_DECODED_BYTES) with 413', async () => {
      const bytes = await deep(100, 50);
      const byPixels = await refusal(measure(bytes, { maxPixels: 4999 }));
      expect(byPixels).to.be.instanceOf(PayloadTooLargeError);
      expect((byPixels as Error).message)
        .to.include('100 × 50 pixels')
        .and.include('MEDIA_MAX_PIXELS');
      const byBytes = await refusal(measure(bytes, { maxDecodedBytes: 39_999 }));
      expect((byBytes as Error).message)
        .to.include('40,000 bytes')
        .and.include('MEDIA_MAX_DECODED_BYTES');
      expect(await measure(bytes, { maxPixels: 5000, maxDecodedBytes: 40_000 })).to.include({ width: 100 });
    });
  });

  describe('the decode settings', () => {
    it('default to 40 MP, 160,000,000 bytes, one decode at once and 8 waiting', () => {
      expect(loadConfig({}).mediaDecode).to.deep.equal({
        maxPixels: 40_000_000,
        maxDecodedBytes: 160_000_000,
        concurrency: 1,
        maxWaiting: 8,
      });
    });

    it('refuse more decodes at once than leave 2 threads of libuv pool to password hashing', () => {
      expect(() => loadConfig({ MEDIA_DECODE_CONCURRENCY: '3' })).to.throw(ConfigError, /UV_THREADPOOL_SIZE/);
      expect(
        loadConfig({ MEDIA_DECODE_CONCURRENCY: '6', UV_THREADPOOL_SIZE: '8' }).mediaDecode.concurrency,
      ).to.equal(6);
    });
  });

  describe('the decode queue', () => {
    const gate = () => {
      let open = () => {};
      const opened = new Promise<void>((resolve) => (open = resolve));
      return { open, task: () => opened };
    };

    it('runs at most `concurrency` at once, first come first served, and refuses uploads beyond `maxWaiting`', async () => {
      const queue = decodeQueue({ concurrency: 1, maxWaiting: 1 });
      const order: string[] = [];
      const first = gate();
      const running = queue.upload(async () => {
        await first.task();
        order.push('first');
      });
      const job = queue.job(() => Promise.resolve(order.push('job')));
      const waiting = queue.upload(() => Promise.resolve(order.push('second')));
      expect(queue.status()).to.include({ running: 1, waiting: 2 });
      const error = (() => {
        try {
          void queue.upload(() => Promise.resolve(order.push('third')));
        } catch (refused) {
          return refused as UnavailableError;
        }
        return null;
      })();
      expect(error).to.be.instanceOf(UnavailableError);
      expect(error!.headers['Retry-After']).to.match(/^[1-9]\d*$/);
      first.open();
      await Promise.all([running, job, waiting]);
      expect(order).to.deep.equal(['first', 'job', 'second']);
      expect(queue.status()).to.deep.equal({ running: 0, waiting: 0, decoded: 3, refused: 1 });
    });

    it('gives up a wait whose signal aborts, and frees nothing it did not take', async () => {
      const queue = decodeQueue({ concurrency: 1, maxWaiting: 4 });
      const first = gate();
      const running = queue.job(first.task);
      const controller = new AbortController();
      const given = queue.job(() => Promise.resolve('never'), controller.signal);
      controller.abort(new Error('timed out'));
      expect(await refusal(given)).to.have.property('message', 'timed out');
      expect(queue.status()).to.include({ running: 1, waiting: 0 });
      first.open();
      await running;
      expect(queue.status()).to.include({ running: 0, waiting: 0 });
    });
  });

  describe('testImage', () => {
    it('paints its boxes where it is told, in the gray levels it is told', async () => {
      const bytes = await testImage({
        width: 1024,
        height: 768,
        format: 'png',
        background: 128,
        boxes: [
          { x: 100, y: 50, width: 200, height: 100, value: 20 },
          { x: 600, y: 400, width: 100, height: 100, value: 240 },
        ],
      });
      const { data, info } = await sharp(bytes).greyscale().raw().toBuffer({ resolveWithObject: true });
      expect([info.width, info.height]).to.deep.equal([1024, 768]);
      const at = (x: number, y: number) => data[y * info.width + x];
      expect(at(0, 0)).to.equal(128);
      expect(at(150, 100)).to.equal(20);
      expect(at(650, 450)).to.equal(240);
      expect(at(300, 100)).to.equal(128);
    });

    it('gives the same bytes for the same options', async () => {
      const options = { width: 64, height: 48, format: 'jpeg', blur: 1 } as const;
      expect(Buffer.compare(await testImage(options), await testImage(options))).to.equal(0);
    });
  });

  describe('media ids', () => {
    it('are m_ and the first 26 hex digits of the SHA-256', () => {
      const sha256 = sha256Of(Buffer.from('abc'));
      expect(sha256).to.equal('ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad');
      expect(mediaIdOf(sha256)).to.equal('m_ba7816bf8f01cfea414140de5d');
    });
  });
});
