import { expect } from 'chai';
import sharp from 'sharp';
import { cocoLabels } from '../../src/cv/detection/coco-labels.js';
import { maxCandidates, nonMaxSuppression, type Candidate } from '../../src/cv/detection/nms.js';
import { CvModelError } from '../../src/cv/models/port.js';
import { applyParameters } from '../../src/cv/models/remote.js';
import { parseRemoteModelSettings } from '../../src/cv/models/remote-settings.js';
import {
  float32Text,
  inferBody,
  letterbox,
  prepareInput,
  type PreparedInput,
} from '../../src/cv/models/tensor-input.js';
import { metadataMismatch } from '../../src/cv/models/tensor-metadata.js';
import { outputTensor, yoloCandidates, yoloLayout } from '../../src/cv/models/tensor-output.js';
import type { TensorInputSetting, TensorSetting } from '../../src/cv/models/tensor-settings.js';

const input: TensorInputSetting = {
  name: 'images',
  width: 640,
  height: 640,
  layout: 'NCHW',
  datatype: 'FP32',
  scale: 1 / 255,
  resize: 'letterbox',
};
const entry = (extra: Record<string, unknown> = {}) => ({
  name: 'yolo',
  url: 'http://triton:8000',
  protocol: 'tensor',
  input: { name: 'images', width: 640, height: 640 },
  output: { name: 'output0', format: 'yolov8' },
  ...extra,
});
const refusal = (message: RegExp) => (error: unknown) =>
  error instanceof CvModelError && error.code === 'model_reply_invalid' && message.test(error.message);

describe('tensor models', () => {
  describe('the setting', () => {
    it('fills in NCHW, FP32, 1/255, letterbox, the COCO labels and an IoU threshold of 0.45', () => {
      const [setting] = parseRemoteModelSettings([entry()]);
      expect(setting).to.deep.equal({
        name: 'yolo',
        url: 'http://triton:8000',
        timeoutMs: 30_000,
        protocol: 'tensor',
        input,
        output: { name: 'output0', format: 'yolov8' },
        labels: cocoLabels,
        iouThreshold: 0.45,
      });
    });

    it('keeps labels, remoteName, modelVersion, UINT8 and NHWC as given', () => {
      const [setting] = parseRemoteModelSettings([
        entry({
          input: { name: 'x', width: 320, height: 256, layout: 'NHWC', datatype: 'UINT8', resize: 'stretch' },
          output: { name: 'y', format: 'yolov5' },
          labels: ['fox', 'badger'],
          iouThreshold: 0.6,
          remoteName: 'yolov5s_onnx',
          modelVersion: '3',
        }),
      ]);
      expect(setting).to.deep.include({
        input: {
          name: 'x',
          width: 320,
          height: 256,
          layout: 'NHWC',
          datatype: 'UINT8',
          scale: 1,
          resize: 'stretch',
        },
        labels: ['fox', 'badger'],
        iouThreshold: 0.6,
        remoteName: 'yolov5s_onnx',
        modelVersion: '3',
      });
    });

    const bad: [string, unknown, RegExp][] = [
      ['an unknown protocol', entry({ protocol: 'grpc' }), /entry 0: protocol must be "json" or "tensor"/],
      ['no input', entry({ input: undefined }), /entry 0 \(yolo\): input must be an object/],
      [
        'an input without width',
        entry({ input: { name: 'images', height: 640 } }),
        /input\.width must be a whole/,
      ],
      [
        'a 5000-pixel side',
        entry({ input: { name: 'i', width: 5000, height: 640 } }),
        /input\.width .* 2048/,
      ],
      [
        'a layout of CHW',
        entry({ input: { ...input, layout: 'CHW' } }),
        /input\.layout must be "NCHW" or "NHWC"/,
      ],
      ['a scale of 0', entry({ input: { ...input, scale: 0 } }), /input\.scale must be/],
      [
        'a scale with UINT8',
        entry({ input: { ...input, datatype: 'UINT8' } }),
        /input\.scale applies to FP32 only/,
      ],
      ['an unknown input field', entry({ input: { ...input, mean: [0.5] } }), /input: unknown field mean/],
      [
        'no output format',
        entry({ output: { name: 'output0' } }),
        /output\.format must be "yolov8" or "yolov5"/,
      ],
      ['a format of yolov11', entry({ output: { name: 'o', format: 'yolov11' } }), /output\.format/],
      ['empty labels', entry({ labels: [] }), /labels must be "coco" or a list/],
      ['labels of numbers', entry({ labels: [1, 2] }), /labels must be/],
      ['an IoU threshold of 0', entry({ iouThreshold: 0 }), /iouThreshold must be/],
      ['a remoteName with a slash', entry({ remoteName: 'a/b' }), /entry 0 \(yolo\): remoteName must be/],
      ['a modelVersion of ..', entry({ modelVersion: '..' }), /modelVersion must be/],
      ['returns in tensor mode', entry({ returns: {} }), /unknown field returns/],
      [
        'tensor fields without the protocol',
        { name: 'a', url: 'http://x', input: {} },
        /unknown field input \(input, output, labels and iouThreshold need "protocol": "tensor"\)/,
      ],
    ];
    for (const [name, value, message] of bad)
      it(`refuses ${name}, naming the entry and field`, () => {
        expect(() => parseRemoteModelSettings([value])).to.throw(message);
      });
  });

  describe('pre-processing', () => {
    it('letterboxes 1200 × 800 into 640 × 640: 640 × 427, 106 rows above', () => {
      expect(letterbox(1200, 800, { width: 640, height: 640 })).to.deep.equal({
        inner: { width: 640, height: 427 },
        placement: { scaleX: 640 / 1200, scaleY: 427 / 800, padX: 0, padY: 106 },
      });
    });

    const solid = (channels: 3 | 4, colour: Record<string, number>) =>
      sharp({ create: { width: 300, height: 200, channels, background: colour } });
    const centre = (prepared: PreparedInput, width = 640) => {
      const at = (320 * width + 320) * 3;
      return [...prepared.values.slice(at, at + 3)];
    };
    const nhwc = { ...input, layout: 'NHWC' as const };

    it('turns a CMYK JPEG into sRGB', async () => {
      const cmyk = await solid(3, { r: 200, g: 10, b: 30 }).toColourspace('cmyk').jpeg().toBuffer();
      expect((await sharp(cmyk).metadata()).space).to.equal('cmyk');
      const [r, g, b] = centre(await prepareInput(cmyk, nhwc));
      expect(r).to.be.above(180);
      expect(g).to.be.below(40);
      expect(b).to.be.below(50);
    });

    it('flattens a transparent PNG on grey 114, and a greyscale one into three equal channels', async () => {
      const clear = await solid(4, { r: 0, g: 255, b: 0, alpha: 0 }).png().toBuffer();
      expect(centre(await prepareInput(clear, nhwc))).to.deep.equal([114, 114, 114]);
      const grey = await solid(3, { r: 50, g: 50, b: 50 }).greyscale().png().toBuffer();
      expect(centre(await prepareInput(grey, nhwc))).to.deep.equal([50, 50, 50]);
    });

    it('applies the EXIF orientation: a 300 × 200 image turned a quarter is 200 × 300', async () => {
      const turned = await solid(3, { r: 10, g: 20, b: 30 })
        .jpeg()
        .withMetadata({ orientation: 6 })
        .toBuffer();
      const prepared = await prepareInput(turned, input);
      expect(prepared.image).to.deep.equal({ width: 200, height: 300 });
      expect(prepared.placement.padX).to.be.above(0);
      expect(prepared.placement.padY).to.equal(0);
    });

    it('lays NCHW out planar: red, then green, then blue', async () => {
      const red = await solid(3, { r: 255, g: 0, b: 0 }).png().toBuffer();
      const { values } = await prepareInput(red, { ...input, resize: 'stretch' });
      const plane = 640 * 640;
      expect([values[1000], values[plane + 1000], values[2 * plane + 1000]]).to.deep.equal([255, 0, 0]);
    });

    it('fails an image it cannot decode with media_unreadable', async () => {
      const png = await solid(3, { r: 1, g: 2, b: 3 }).png().toBuffer();
      await prepareInput(png.subarray(0, png.length - 100), input).then(
        () => expect.fail('decoded'),
        (error: unknown) =>
          expect(error).to.be.instanceOf(CvModelError).with.property('code', 'media_unreadable'),
      );
    });

    it('writes each 32-bit float with the fewest digits that read back the same', () => {
      expect(float32Text(114 / 255)).to.equal('0.44705883');
      expect(float32Text(0)).to.equal('0');
      expect(float32Text(1)).to.equal('1');
      for (let byte = 0; byte < 256; byte += 1)
        expect(Math.fround(Number(float32Text(byte / 255)))).to.equal(Math.fround(byte / 255));
    });

    it('builds the infer body as KServe v2 JSON, 640 × 640 × 3 in well under a second', () => {
      const values = new Uint8Array(3 * 640 * 640).map((_, i) => i % 256);
      const started = performance.now();
      const body = inferBody(input, values);
      const ms = performance.now() - started;
      expect(ms).to.be.below(1000);
      const parsed = JSON.parse(body.toString('utf8'));
      expect(parsed.inputs[0]).to.deep.include({ name: 'images', shape: [1, 3, 640, 640], datatype: 'FP32' });
      expect(parsed.inputs[0].data).to.have.length(values.length);
      expect(parsed.inputs[0].data[255]).to.equal(1);
      expect(parsed.inputs[0].data[51]).to.be.closeTo(0.2, 1e-7);
      const uint8 = JSON.parse(
        inferBody({ ...input, datatype: 'UINT8', layout: 'NHWC', scale: 1 }, values).toString(),
      );
      expect(uint8.inputs[0]).to.deep.include({ shape: [1, 640, 640, 3], datatype: 'UINT8' });
      expect(uint8.inputs[0].data.slice(254, 258)).to.deep.equal([254, 255, 0, 1]);
    });
  });

  describe('decoding the output', () => {
    const reply = (shape: unknown, data: unknown, extra = {}) => ({
      outputs: [{ name: 'output0', datatype: 'FP32', shape, data, ...extra }],
    });

    it('takes nested data as the shape says', () => {
      expect(
        outputTensor(
          reply(
            [1, 2, 2],
            [
              [
                [1, 2],
                [3, 4],
              ],
            ],
          ),
          'output0',
        ),
      ).to.deep.equal({
        shape: [1, 2, 2],
        data: [1, 2, 3, 4],
      });
    });

    const broken: [string, unknown, RegExp][] = [
      ['no outputs', { model_name: 'm' }, /must be an object with outputs/],
      ['another output', { outputs: [{ name: 'scores' }] }, /no output named output0 \(it has "scores"\)/],
      ['INT64', reply([1], [1], { datatype: 'INT64' }), /datatype "INT64"/],
      ['a negative dimension', reply([1, -1], [1]), /list of whole numbers/],
      [
        'a shape of 10^15 × 10^15',
        reply([1e15, 1e15], [1]),
        /\[1000000000000000, 1000000000000000\] but 1 data/,
      ],
      ['no data', reply([1], undefined), /no data list/],
      ['null in the data', reply([2], [1, null]), /data element 1 is null/],
    ];
    for (const [name, body, message] of broken)
      it(`refuses ${name}`, () => {
        expect(() => outputTensor(body, 'output0'))
          .to.throw(CvModelError)
          .that.satisfies(refusal(message));
      });

    it('reads yolov8 as [1, 4 + C, N], or [1, N, 4 + C] when only that fits, and yolov5 as [1, N, 5 + C]', () => {
      expect(yoloLayout([1, 84, 8400], 'yolov8', 80)).to.include({
        boxes: 8400,
        boxStride: 1,
        attributeStride: 8400,
      });
      expect(yoloLayout([1, 8400, 84], 'yolov8', 80)).to.include({
        boxes: 8400,
        boxStride: 84,
        attributeStride: 1,
      });
      // 84 boxes of 84: the exported layout wins.
      expect(yoloLayout([1, 84, 84], 'yolov8', 80)).to.include({ boxStride: 1, attributeStride: 84 });
      expect(yoloLayout([1, 25200, 85], 'yolov5', 80)).to.include({ boxes: 25200, objectness: true });
      expect(() => yoloLayout([1, 85, 8400], 'yolov8', 80)).to.throw(/81 classes per box .* labels names 80/);
      expect(() => yoloLayout([84, 8400], 'yolov8', 80)).to.throw(/not \[1, rows, columns\]/);
    });

    const placement = { scaleX: 640 / 1200, scaleY: 427 / 800, padX: 0, padY: 106 };
    const image = { width: 1200, height: 800 };

    it('undoes the letterbox and clips to the image', () => {
      // yolov8, 2 classes, 2 boxes: one whole, one reaching above the image into the band.
      const data = [320, 100, 106 + 213, 110, 100, 40, 100, 40, 0.9, 0.1, 0.2, 0.7];
      const candidates = yoloCandidates(
        { shape: [1, 6, 2], data },
        { format: 'yolov8', classes: 2, minConfidence: 0.3, placement, image },
      );
      expect(candidates).to.have.length(2);
      const [whole, clipped] = candidates as [Candidate, Candidate];
      expect(whole.classIndex).to.equal(0);
      expect(whole.x1).to.be.closeTo(270 / placement.scaleX, 1e-9);
      expect(whole.y1).to.be.closeTo((319 - 50 - 106) / placement.scaleY, 1e-9);
      expect(clipped).to.deep.include({ classIndex: 1, score: 0.7, y1: 0 });
    });

    it('multiplies yolov5 objectness by the best class score and drops what is below minConfidence', () => {
      const data = [50, 200, 20, 20, 0.5, 0.9, 0.3, 60, 200, 20, 20, 0.2, 0.9, 0.1];
      const candidates = yoloCandidates(
        { shape: [1, 2, 7], data },
        { format: 'yolov5', classes: 2, minConfidence: 0.3, placement, image },
      );
      expect(candidates).to.have.length(1);
      expect(candidates[0]).to.include({ classIndex: 0, score: 0.45 });
    });

    it('refuses negative sizes and scores outside 0..1', () => {
      const options = { format: 'yolov8' as const, classes: 1, minConfidence: 0.3, placement, image };
      expect(() => yoloCandidates({ shape: [1, 5, 1], data: [1, 1, 1, -2, 0.5] }, options)).to.throw(
        /box 0 has a negative height \(-2\)/,
      );
      expect(() => yoloCandidates({ shape: [1, 5, 1], data: [1, 1, 1, 2, -4] }, options)).to.throw(/logits/);
    });

    it('suppresses 100,000 candidates above the threshold in well under a second, at most 3000 ranked', () => {
      const candidates: Candidate[] = Array.from({ length: 100_000 }, (_, i) => ({
        classIndex: i % 3,
        score: 0.5 + (i % 1000) / 2001,
        x1: i % 600,
        y1: i % 400,
        x2: (i % 600) + 5 + (i % 7),
        y2: (i % 400) + 5 + (i % 5),
      }));
      const started = performance.now();
      const kept = nonMaxSuppression(candidates, {
        minConfidence: 0.3,
        maxDetections: 1000,
        iouThreshold: 0.45,
      });
      expect(performance.now() - started).to.be.below(1000);
      expect(kept.length).to.be.at.most(Math.min(1000, maxCandidates));
      expect(kept[0]!.score).to.be.at.least(kept.at(-1)!.score);
    });
  });

  describe("checking the server's metadata", () => {
    const setting: TensorSetting = {
      input,
      output: { name: 'output0', format: 'yolov8' },
      labels: cocoLabels,
      iouThreshold: 0.45,
    };
    const metadata = (inputShape: number[], outputShape: number[], datatype = 'FP32') => ({
      name: 'yolov8n',
      inputs: [{ name: 'images', datatype, shape: inputShape }],
      outputs: [{ name: 'output0', datatype: 'FP32', shape: outputShape }],
    });

    it('accepts a batch dimension of -1 or none, and a variable N', () => {
      expect(metadataMismatch(metadata([-1, 3, 640, 640], [-1, 84, -1]), setting)).to.equal(undefined);
      expect(metadataMismatch(metadata([3, 640, 640], [84, 8400]), setting)).to.equal(undefined);
      expect(metadataMismatch(metadata([1, 3, 640, 640], [1, 8400, 84]), setting)).to.equal(undefined);
    });

    const mismatches: [string, unknown, RegExp][] = [
      [
        'another size',
        metadata([1, 3, 320, 320], [1, 84, 2100]),
        /input images has shape \[1, 3, 320, 320\]/,
      ],
      ['NHWC', metadata([1, 640, 640, 3], [1, 84, 8400]), /not \[1, 3, 640, 640\] \(640×640 NCHW\)/],
      [
        'UINT8',
        metadata([1, 3, 640, 640], [1, 84, 8400], 'UINT8'),
        /input images is UINT8 on the server, not FP32/,
      ],
      ['another class count', metadata([1, 3, 640, 640], [1, 6, 8400]), /not \[1, 84, N\] for 80 labels/],
      [
        'no such input',
        { inputs: [{ name: 'x', datatype: 'FP32', shape: [1] }], outputs: [] },
        /no input named images \(its inputs: x\)/,
      ],
      ['nothing', 'ready', /no model metadata object/],
    ];
    for (const [name, value, message] of mismatches)
      it(`names ${name}`, () => {
        expect(metadataMismatch(value, setting)).to.match(message);
      });
  });

  describe('the json protocol and the job parameters', () => {
    const detection = (confidence: number) => ({
      label: 'fox',
      confidence,
      bbox: { x: 0, y: 0, width: 1, height: 1 },
    });

    it('leaves out detections below minConfidence and keeps the maxDetections most confident, in order', () => {
      const result = { detections: [0.2, 0.9, 0.5, 0.7, 0.95].map(detection), summary: {} };
      expect(
        applyParameters(result, { minConfidence: 0.3, maxDetections: 2 }).detections.map((d) => d.confidence),
      ).to.deep.equal([0.9, 0.95]);
      expect(applyParameters(result, { minConfidence: 0.6, maxDetections: 10 }).detections).to.have.length(3);
    });
  });
});
