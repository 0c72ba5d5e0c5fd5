import { expect } from 'chai';
import { assertDecodable } from '../../src/cv/image.js';
import { imageQuality, laplacianVariance } from '../../src/cv/models/image-quality.js';
import { connectedComponents, objectProposals, otsuThreshold } from '../../src/cv/models/object-proposals.js';
import {
  CvModelError,
  isModelName,
  type BoundingBox,
  type ModelResult,
  type ModelRun,
} from '../../src/cv/models/port.js';
import { modelRegistry } from '../../src/cv/models/registry.js';
import { inferRequest, parseInferReply } from '../../src/cv/models/remote.js';
import { parseRemoteModelSettings } from '../../src/cv/models/remote-settings.js';
import { checkResult } from '../../src/cv/models/result.js';
import { testImage, type TestImageBox } from '../support/images.js';

const aRun = (): ModelRun => ({
  signal: new AbortController().signal,
  parameters: {},
  decode: (work) => work(),
});

/** The box of a rectangle drawn at pixel coordinates, normalized as the models report boxes. */
const normalized = (box: Omit<TestImageBox, 'value'>, width: number, height: number): BoundingBox => ({
  x: box.x / width,
  y: box.y / height,
  width: box.width / width,
  height: box.height / height,
});

const expectBoxesMatch = (found: BoundingBox[], expected: BoundingBox[], tolerance: number) => {
  expect(found, JSON.stringify(found)).to.have.length(expected.length);
  const sortByPlace = (boxes: BoundingBox[]) => [...boxes].sort((a, b) => a.y - b.y || a.x - b.x);
  const [sortedFound, sortedExpected] = [sortByPlace(found), sortByPlace(expected)];
  sortedExpected.forEach((box, index) => {
    const got = sortedFound[index]!;
    for (const key of ['x', 'y', 'width', 'height'] as const) {
      expect(got[key], `box ${index} ${key}: ${JSON.stringify(got)}`).to.be.closeTo(box[key], tolerance);
    }
  });
};

/** Rejects with a CvModelError of this code. */
const expectFailure = async (run: Promise<unknown>, code: string) => {
  try {
    await run;
  } catch (error) {
    expect(error, String(error)).to.be.instanceOf(CvModelError);
    expect((error as CvModelError).code, (error as Error).message).to.equal(code);
    return error as CvModelError;
  }
  throw new Error(`expected a failure with ${code}`);
};

const twoDark = [
  { x: 100, y: 120, width: 100, height: 80, value: 30 },
  { x: 400, y: 300, width: 100, height: 80, value: 30 },
];

describe('the built-in CV models', () => {
  describe('object-proposals', () => {
    for (const format of ['png', 'jpeg', 'webp'] as const) {
      it(`finds two dark 100x80 rectangles on a light 640x480 ${format} where they are`, async () => {
        const image = await testImage({ width: 640, height: 480, format, background: 210, boxes: twoDark });
        const { detections, summary } = await objectProposals.run(image, aRun());
        expectBoxesMatch(
          detections.map((d) => d.bbox),
          twoDark.map((box) => normalized(box, 640, 480)),
          0.005,
        );
        for (const detection of detections) {
          expect(detection.label).to.equal('dark-object');
          expect(detection.confidence).to.be.within(0.6, 1);
          expect(detection.fill).to.be.closeTo(1, 0.02);
        }
        expect(summary).to.deep.include({ objects: 2, candidates: 2, polarity: 'dark' });
        expect(summary.backgroundLuminance).to.be.closeTo(210, 2);
      });
    }

    it('finds bright objects on a dark background, and labels them so', async () => {
      const boxes = [
        { x: 40, y: 30, width: 60, height: 60, value: 240 },
        { x: 300, y: 100, width: 150, height: 40, value: 230 },
        { x: 500, y: 380, width: 90, height: 70, value: 250 },
      ];
      const image = await testImage({ width: 640, height: 480, format: 'png', background: 25, boxes });
      const { detections, summary } = await objectProposals.run(image, aRun());
      expectBoxesMatch(
        detections.map((d) => d.bbox),
        boxes.map((box) => normalized(box, 640, 480)),
        0.005,
      );
      expect(detections.map((d) => d.label)).to.deep.equal([
        'bright-object',
        'bright-object',
        'bright-object',
      ]);
      expect(summary.polarity).to.equal('bright');
    });

    it('still finds the boxes in a blurred image, within a few pixels', async () => {
      const image = await testImage({
        width: 640,
        height: 480,
        format: 'jpeg',
        background: 210,
        boxes: twoDark,
        blur: 3,
      });
      const { detections } = await objectProposals.run(image, aRun());
      expectBoxesMatch(
        detections.map((d) => d.bbox),
        twoDark.map((box) => normalized(box, 640, 480)),
        0.015,
      );
    });

    it('gives normalized boxes on a large image it analyses scaled down', async () => {
      const boxes = [
        { x: 400, y: 300, width: 500, height: 400, value: 20 },
        { x: 2500, y: 1800, width: 800, height: 600, value: 20 },
      ];
      const image = await testImage({ width: 4000, height: 3000, format: 'jpeg', background: 200, boxes });
      const started = Date.now();
      const { detections, summary } = await objectProposals.run(image, aRun());
      const elapsed = Date.now() - started;
      expectBoxesMatch(
        detections.map((d) => d.bbox),
        boxes.map((box) => normalized(box, 4000, 3000)),
        0.005,
      );
      expect(summary.analysed).to.deep.equal({ width: 640, height: 480 });
      expect(elapsed, 'a 12 MP image takes well under a few seconds').to.be.below(5000);
    });

    it('finds nothing in a flat image, and ignores specks below the minimum area', async () => {
      const flat = await testImage({ width: 640, height: 480, format: 'png', background: 128 });
      expect((await objectProposals.run(flat, aRun())).detections).to.deep.equal([]);
      const specks = await testImage({
        width: 640,
        height: 480,
        format: 'png',
        background: 200,
        boxes: [
          { x: 10, y: 10, width: 5, height: 5, value: 0 },
          { x: 300, y: 200, width: 120, height: 100, value: 0 },
        ],
      });
      const { detections } = await objectProposals.run(specks, aRun());
      expectBoxesMatch(
        detections.map((d) => d.bbox),
        [normalized({ x: 300, y: 200, width: 120, height: 100 }, 640, 480)],
        0.005,
      );
    });

    it('ranks higher-contrast objects first', async () => {
      const boxes = [
        { x: 50, y: 50, width: 100, height: 100, value: 120 },
        { x: 400, y: 250, width: 100, height: 100, value: 10 },
      ];
      const image = await testImage({ width: 640, height: 480, format: 'png', background: 220, boxes });
      const { detections } = await objectProposals.run(image, aRun());
      expect(detections).to.have.length(2);
      expect(detections[0]!.bbox.x).to.be.closeTo(400 / 640, 0.005);
      expect(detections[0]!.confidence).to.be.above(detections[1]!.confidence);
    });
  });

  describe('image-quality', () => {
    it('calls a sharp, well exposed image usable and the same image blurred blurry', async () => {
      const options = { width: 640, height: 480, format: 'jpeg', background: 210, boxes: twoDark } as const;
      const sharp = await imageQuality.run(await testImage(options), aRun());
      const blurred = await imageQuality.run(await testImage({ ...options, blur: 4 }), aRun());
      expect(sharp.detections).to.deep.equal([]);
      expect(sharp.summary).to.deep.include({ usable: true, reasons: [] });
      expect(blurred.summary).to.deep.include({ usable: false, reasons: ['blurry'] });
      expect(sharp.summary.sharpness).to.be.above(100);
      expect(blurred.summary.sharpness).to.be.below((sharp.summary.sharpness as number) / 20);
      expect(sharp.summary.resolution).to.deep.equal({ width: 640, height: 480, megapixels: 0.307 });
      expect(sharp.summary.meanLuminance).to.be.closeTo(
        (210 * (640 * 480 - 2 * 8000) + 30 * 2 * 8000) / (640 * 480),
        1,
      );
    });

    it('calls an all-white image clipped, overexposed and unusable', async () => {
      const white = await testImage({ width: 640, height: 480, format: 'png', background: 255 });
      const { summary } = await imageQuality.run(white, aRun());
      expect(summary.usable).to.equal(false);
      expect(summary.reasons).to.include.members(['clipped', 'overexposed']);
      expect(summary.clipping).to.deep.equal({ dark: 0, bright: 1, total: 1 });
      expect(summary.meanLuminance).to.equal(255);
    });

    it('calls a dark image underexposed, and a small one low resolution', async () => {
      const dark = await testImage({
        width: 640,
        height: 480,
        format: 'png',
        background: 15,
        boxes: twoDark.map((box) => ({ ...box, value: 60 })),
      });
      expect((await imageQuality.run(dark, aRun())).summary.reasons).to.include('underexposed');
      const small = await testImage({
        width: 200,
        height: 150,
        format: 'png',
        background: 200,
        boxes: [{ x: 20, y: 20, width: 50, height: 40, value: 20 }],
      });
      const { summary } = await imageQuality.run(small, aRun());
      expect(summary.reasons).to.deep.equal(['low_resolution']);
      expect(summary.resolution).to.deep.equal({ width: 200, height: 150, megapixels: 0.03 });
    });

    it('computes the variance of the Laplacian', () => {
      // A single bright pixel in the middle of a 3x3 image: one interior pixel, one value: variance 0.
      expect(laplacianVariance(new Uint8Array([0, 0, 0, 0, 9, 0, 0, 0, 0]), 3, 3)).to.equal(0);
      // A 4x3 image with two interior pixels whose Laplacians are -40 and +10 around a mean of -15.
      const data = new Uint8Array([0, 0, 0, 0, 0, 10, 0, 0, 0, 0, 0, 0]);
      expect(laplacianVariance(data, 4, 3)).to.equal(625);
    });
  });

  describe('unreadable images', () => {
    for (const format of ['jpeg', 'png', 'webp'] as const) {
      it(`fail with media_unreadable for a truncated ${format}, in every model and in the remote check`, async () => {
        const whole = await testImage({ width: 640, height: 480, format, background: 200, boxes: twoDark });
        const truncated = whole.subarray(0, Math.floor(whole.length * 0.6));
        for (const model of [imageQuality, objectProposals]) {
          const error = await expectFailure(model.run(truncated, aRun()), 'media_unreadable');
          expect(error.message).to.match(/^The image cannot be decoded: /);
        }
        await expectFailure(assertDecodable(truncated), 'media_unreadable');
      });
    }

    it('fail with media_unreadable for bytes that are no image', async () => {
      await expectFailure(
        objectProposals.run(Buffer.from('not an image at all'), aRun()),
        'media_unreadable',
      );
      await expectFailure(imageQuality.run(Buffer.alloc(0), aRun()), 'media_unreadable');
    });

    it('pass the remote check when whole', async () => {
      await assertDecodable(await testImage({ width: 64, height: 48, format: 'png', background: 10 }));
    });
  });

  describe('the pieces', () => {
    it("Otsu's threshold separates two populations", () => {
      const histogram = new Array<number>(256).fill(0);
      histogram[40] = 100;
      histogram[200] = 300;
      const threshold = otsuThreshold(histogram, 400);
      expect(threshold).to.be.at.least(40).and.below(200);
    });

    it('connected components join diagonal neighbours and keep apart what does not touch', () => {
      // 1 1 0 0 0
      // 0 1 0 0 1
      // 0 0 1 0 1
      const mask = new Uint8Array([1, 1, 0, 0, 0, 0, 1, 0, 0, 1, 0, 0, 1, 0, 1]);
      const components = connectedComponents(mask, new Uint8Array(15).fill(7), 5, 3);
      expect(
        components.map(({ area, minX, minY, maxX, maxY }) => ({ area, minX, minY, maxX, maxY })),
      ).to.deep.equal([
        { area: 4, minX: 0, minY: 0, maxX: 2, maxY: 2 },
        { area: 2, minX: 4, minY: 1, maxX: 4, maxY: 2 },
      ]);
      expect(components[0]!.sum).to.equal(28);
    });

    it('connected components merge labels that meet late (a U shape)', () => {
      // 1 0 1
      // 1 0 1
      // 1 1 1
      const mask = new Uint8Array([1, 0, 1, 1, 0, 1, 1, 1, 1]);
      expect(connectedComponents(mask, new Uint8Array(9), 3, 3)).to.have.length(1);
    });

    it('model names are plain: no path characters', () => {
      for (const good of ['image-quality', 'yolo.v8', 'a', 'my_model-2'])
        expect(isModelName(good), good).to.equal(true);
      for (const bad of [
        '../etc',
        'a/b',
        'a\\b',
        '',
        'A',
        '..',
        'a..b',
        'x?y',
        'x%2Fy',
        '-x',
        'a'.repeat(65),
      ])
        expect(isModelName(bad), bad).to.equal(false);
    });

    it('the registry lists the built-in models first, and refuses two models of one name', () => {
      const registry = modelRegistry({
        remote: [{ name: 'detector', url: 'http://127.0.0.1:9', timeoutMs: 1000 }],
      });
      expect(registry.list().map((m) => [m.name, m.kind])).to.deep.equal([
        ['image-quality', 'builtin'],
        ['objects-coco', 'builtin'],
        ['object-proposals', 'builtin'],
        ['detector', 'remote'],
      ]);
      expect(registry.get('detector')!.description).to.match(/127\.0\.0\.1:9/);
      expect(() =>
        modelRegistry({ remote: [{ name: 'image-quality', url: 'http://x', timeoutMs: 1 }] }),
      ).to.throw(/same name/);
    });
  });

  describe('result checks', () => {
    const detection = { label: 'fox', confidence: 0.9, bbox: { x: 0.1, y: 0.2, width: 0.3, height: 0.4 } };

    it('keep a valid result with the model’s extra fields', () => {
      const result = { detections: [{ ...detection, trackId: 7 }], summary: { count: 1 } };
      expect(checkResult(result)).to.deep.equal(result);
    });

    const invalid: [string, unknown, RegExp][] = [
      ['no detections', { summary: {} }, /detections must be a list/],
      ['a summary that is a list', { detections: [], summary: [] }, /summary must be an object/],
      ['an empty label', { detections: [{ ...detection, label: '' }], summary: {} }, /detections\.0\.label/],
      ['confidence above 1', { detections: [{ ...detection, confidence: 1.2 }], summary: {} }, /confidence/],
      [
        'a string confidence',
        { detections: [{ ...detection, confidence: '0.5' }], summary: {} },
        /confidence/,
      ],
      [
        'a box in pixels',
        { detections: [{ ...detection, bbox: { x: 10, y: 10, width: 50, height: 50 } }], summary: {} },
        /detections\.0\.bbox\.x/,
      ],
      [
        'a box past the right edge',
        { detections: [{ ...detection, bbox: { x: 0.8, y: 0, width: 0.5, height: 0.1 } }], summary: {} },
        /inside the image/,
      ],
      [
        'a box without height',
        { detections: [{ ...detection, bbox: { x: 0, y: 0, width: 1 } }], summary: {} },
        /height/,
      ],
      ['too many detections', { detections: new Array(1001).fill(detection), summary: {} }, /at most 1000/],
    ];
    for (const [name, value, message] of invalid) {
      it(`refuse ${name} with model_reply_invalid`, () => {
        expect(() => checkResult(value))
          .to.throw(CvModelError, message)
          .with.property('code', 'model_reply_invalid');
      });
    }
  });

  describe('the Open Inference Protocol mapping', () => {
    const output = (name: string, value: unknown) => ({
      name,
      datatype: 'BYTES',
      shape: [1],
      data: [JSON.stringify(value)],
    });
    const detections = [{ label: 'fox', confidence: 0.5, bbox: { x: 0, y: 0, width: 1, height: 1 } }];

    it('sends the image as one base64 BYTES input named image', () => {
      expect(inferRequest(Buffer.from('abc'))).to.deep.equal({
        inputs: [{ name: 'image', shape: [1], datatype: 'BYTES', data: ['YWJj'] }],
      });
    });

    it('reads detections and summary from their outputs; summary may be left out', () => {
      const reply = {
        model_name: 'm',
        outputs: [output('detections', detections), output('summary', { n: 1 })],
      };
      expect(parseInferReply(reply)).to.deep.equal({ detections, summary: { n: 1 } } satisfies ModelResult);
      expect(parseInferReply({ outputs: [output('detections', [])] })).to.deep.equal({
        detections: [],
        summary: {},
      });
    });

    const malformed: [string, unknown, RegExp][] = [
      ['a list', [], /must be an object with outputs/],
      ['no outputs', { model_name: 'm' }, /must be an object with outputs/],
      ['no detections output', { outputs: [output('summary', {})] }, /no output named detections/],
      [
        'detections as FP32',
        { outputs: [{ ...output('detections', []), datatype: 'FP32' }] },
        /datatype BYTES/,
      ],
      ['a shape of [2]', { outputs: [{ ...output('detections', []), shape: [2] }] }, /shape \[1\]/],
      ['data that is not JSON', { outputs: [{ ...output('detections', []), data: ['[{'] }] }, /valid JSON/],
      [
        'data that is no string',
        { outputs: [{ ...output('detections', []), data: [[]] }] },
        /one JSON string/,
      ],
      [
        'detections that are an object',
        { outputs: [output('detections', { a: 1 })] },
        /detections must be a list/,
      ],
      [
        'a summary that is a string',
        { outputs: [output('detections', []), output('summary', 'fine')] },
        /summary must be an object/,
      ],
    ];
    for (const [name, reply, message] of malformed) {
      it(`refuses a reply with ${name} as model_reply_invalid`, () => {
        expect(() => parseInferReply(reply))
          .to.throw(CvModelError, message)
          .with.property('code', 'model_reply_invalid');
      });
    }
  });

  describe('the remote models setting', () => {
    it('reads a list of {name, url, timeout}, with a default time-out of 30 s', () => {
      expect(
        parseRemoteModelSettings([
          { name: 'detector', url: 'http://127.0.0.1:8080/', timeout: '10s' },
          { name: 'classifier', url: 'https://models.example.test/base', description: 'Birds' },
        ]),
      ).to.deep.equal([
        { name: 'detector', url: 'http://127.0.0.1:8080', timeoutMs: 10_000 },
        {
          name: 'classifier',
          url: 'https://models.example.test/base',
          timeoutMs: 30_000,
          description: 'Birds',
        },
      ]);
      expect(parseRemoteModelSettings({ models: [{ name: 'a', url: 'http://x' }] })).to.have.length(1);
    });

    const bad: [string, unknown, RegExp][] = [
      ['an object', { name: 'a' }, /JSON list/],
      ['a name with a slash', [{ name: 'a/b', url: 'http://x' }], /entry 0: name/],
      ['a built-in name', [{ name: 'image-quality', url: 'http://x' }], /taken/],
      [
        'the same name twice',
        [
          { name: 'a', url: 'http://x' },
          { name: 'a', url: 'http://y' },
        ],
        /entry 1.*taken/,
      ],
      ['a relative url', [{ name: 'a', url: '/models' }], /absolute http/],
      ['a file url', [{ name: 'a', url: 'file:///etc/passwd' }], /http or https/],
      ['a bad time-out', [{ name: 'a', url: 'http://x', timeout: 'soon' }], /timeout/],
      ['a zero time-out', [{ name: 'a', url: 'http://x', timeout: '0s' }], /timeout/],
      ['an unknown field', [{ name: 'a', url: 'http://x', retries: 3 }], /unknown field retries/],
    ];
    for (const [name, value, message] of bad) {
      it(`refuses ${name}`, () => {
        expect(() => parseRemoteModelSettings(value, ['image-quality', 'object-proposals'])).to.throw(
          message,
        );
      });
    }
  });
});
