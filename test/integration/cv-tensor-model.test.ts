import { expect } from 'chai';
import { cvTenant } from '../support/cv.js';
import {
  startOpenInferenceServer,
  type OpenInferenceServer,
  type ServedModel,
  type TensorAnswer,
} from '../support/open-inference-server.js';
import {
  channelAt,
  findColours,
  sceneImage,
  tensorReply,
  withDuplicatesAndNoise,
  yoloTensor,
  type Rgb,
  type SceneInput,
  type SceneRect,
} from '../support/scene-detector.js';
import { startTestServer, withTenant, type TestServer } from '../support/server.js';

const labels = ['red', 'green', 'blue'];
const colours: Rgb[] = [
  [220, 40, 40],
  [40, 180, 60],
  [40, 60, 220],
];
/** A 3:2 image, so a square input letterboxes it with bands above and below. */
const image = { width: 480, height: 320 };
const rects: SceneRect[] = [
  { x: 40, y: 30, width: 120, height: 80, rgb: colours[0]! },
  { x: 300, y: 60, width: 100, height: 160, rgb: colours[1]! },
  { x: 200, y: 220, width: 150, height: 70, rgb: colours[2]! },
];

interface Bbox {
  x: number;
  y: number;
  width: number;
  height: number;
}
const iou = (a: Bbox, b: Bbox) => {
  const w = Math.min(a.x + a.width, b.x + b.width) - Math.max(a.x, b.x);
  const h = Math.min(a.y + a.height, b.y + b.height) - Math.max(a.y, b.y);
  if (w <= 0 || h <= 0) return 0;
  return (w * h) / (a.width * a.height + b.width * b.height - w * h);
};
const truth = rects.map((r) => ({
  x: r.x / image.width,
  y: r.y / image.height,
  width: r.width / image.width,
  height: r.height / image.height,
}));

type Format = 'yolov8' | 'yolov5';
interface Scene extends SceneInput {
  format: Format;
  resize?: 'letterbox' | 'stretch';
  transposed?: boolean;
  labels?: string[] | 'coco';
  remoteName?: string;
  modelVersion?: string;
}

const inputShape = (s: SceneInput) =>
  s.layout === 'NCHW' ? [-1, 3, s.height, s.width] : [-1, s.height, s.width, 3];
const outputShape = (format: Format, classes: number) =>
  format === 'yolov5' ? [-1, -1, 5 + classes] : [-1, 4 + classes, -1];

/** The served model and the service's entry for one detector. */
const detector = (name: string, scene: Scene, infer?: (input: SceneInput) => ServedModel['infer']) => {
  const classes = scene.labels === 'coco' ? 80 : (scene.labels ?? labels).length;
  const served: ServedModel = {
    name: scene.remoteName ?? name,
    ...(scene.modelVersion ? { version: scene.modelVersion } : {}),
    inputs: [{ name: 'images', datatype: scene.datatype, shape: inputShape(scene) }],
    outputs: [{ name: 'output0', datatype: 'FP32', shape: outputShape(scene.format, classes) }],
    infer:
      infer?.(scene) ??
      ((request) => {
        const found = findColours(request.inputs[0]!.data, scene, colours);
        const tensor = yoloTensor(withDuplicatesAndNoise(found), {
          format: scene.format,
          classes,
          ...(scene.transposed ? { transposed: true } : {}),
        });
        return { body: tensorReply(served.name, 'output0', tensor, scene.modelVersion ?? '1') };
      }),
  };
  const entry = {
    name,
    timeout: '10s',
    protocol: 'tensor',
    input: {
      name: 'images',
      width: scene.width,
      height: scene.height,
      layout: scene.layout,
      datatype: scene.datatype,
      ...(scene.datatype === 'FP32' ? { scale: scene.scale } : {}),
      ...(scene.resize ? { resize: scene.resize } : {}),
    },
    output: { name: 'output0', format: scene.format },
    ...(scene.labels === 'coco' ? {} : { labels: scene.labels ?? labels }),
    ...(scene.remoteName ? { remoteName: scene.remoteName } : {}),
    ...(scene.modelVersion ? { modelVersion: scene.modelVersion } : {}),
  };
  return { served, entry };
};

const fp32 = (width: number, height: number, layout: 'NCHW' | 'NHWC' = 'NCHW'): SceneInput => ({
  width,
  height,
  layout,
  datatype: 'FP32',
  scale: 1 / 255,
});

/** A small detector whose infer answers `answer`, whatever it is sent. */
const hostile = (name: string, answer: (input: SceneInput) => TensorAnswer, labelList = labels) =>
  detector(name, { ...fp32(64, 64), format: 'yolov8', labels: labelList }, (input) => () => answer(input));

const v8Output = (shape: number[], data: unknown[], extra: Record<string, unknown> = {}) => ({
  body: { model_name: 'm', outputs: [{ name: 'output0', datatype: 'FP32', shape, data, ...extra }] },
});

const cap = 16 * 1024 * 1024;
const padded = (reply: unknown, size: number) => {
  const text = JSON.stringify(reply);
  return `${text}${' '.repeat(size - Buffer.byteLength(text))}`;
};
const smallReply = tensorReply(
  'm',
  'output0',
  yoloTensor([{ classIndex: 0, score: 0.9, cx: 32, cy: 32, w: 20, h: 20 }], {
    format: 'yolov8',
    classes: 3,
    n: 1,
  }),
);

const models = [
  detector('scene-v8', { ...fp32(640, 640), format: 'yolov8' }),
  detector('scene-v8-coco', {
    ...fp32(640, 640),
    format: 'yolov8',
    transposed: true,
    labels: 'coco',
    remoteName: 'yolov8n',
    modelVersion: '2',
  }),
  detector('scene-v5-nhwc', { ...fp32(320, 256, 'NHWC'), format: 'yolov5' }),
  detector('scene-uint8', {
    width: 416,
    height: 416,
    layout: 'NHWC',
    datatype: 'UINT8',
    scale: 1,
    format: 'yolov8',
    resize: 'stretch',
  }),
  hostile('wrong-name', () => ({
    body: { outputs: [{ name: 'output1', datatype: 'FP32', shape: [1, 7, 1], data: [0, 0, 0, 0, 0, 0, 0] }] },
  })),
  hostile('wrong-datatype', () => v8Output([1, 7, 1], [0, 0, 0, 0, 0, 0, 0], { datatype: 'BYTES' })),
  hostile('shape-mismatch', () => v8Output([1, 7, 10], new Array(69).fill(0))),
  hostile('huge-shape', () => v8Output([1, 7, 1e15], new Array(7).fill(0))),
  hostile('not-numbers', () => v8Output([1, 7, 1], [1, 2, 3, '0.5', 0, 0, 0])),
  hostile('infinite', () => ({
    rawBody: '{"outputs":[{"name":"output0","datatype":"FP32","shape":[1,7,1],"data":[1,2,3,4,1e999,0,0]}]}',
  })),
  hostile('class-count', () => v8Output([1, 85, 2], new Array(170).fill(0))),
  hostile('negative-size', () => v8Output([1, 7, 1], [30, 30, -5, 10, 0.9, 0, 0])),
  hostile('logits', () => v8Output([1, 7, 1], [30, 30, 5, 10, 3.2, 0, 0])),
  // A box far past the right and bottom edges, and one reaching left of the image: clipped, not refused.
  hostile('out-of-range', () => v8Output([1, 7, 2], [60, 2, 60, 30, 100, 20, 100, 10, 0.9, 0, 0, 0.8, 0, 0])),
  hostile(
    'flood',
    () => {
      const n = 100_000;
      const data = new Array<number>(5 * n);
      for (let i = 0; i < n; i += 1) {
        data[i] = (i * 7) % 64;
        data[n + i] = (i * 13) % 64;
        data[2 * n + i] = 3 + (i % 5);
        data[3 * n + i] = 3 + (i % 7);
        data[4 * n + i] = 0.5 + (i % 1000) / 2001;
      }
      return v8Output([1, 5, n], data);
    },
    ['thing'],
  ),
  hostile('at-cap', () => ({ rawBody: padded(smallReply, cap) })),
  hostile('over-cap', () => ({ rawBody: padded(smallReply, cap + 1) })),
];

/** Served with a different input size than the service is told: the metadata check names it. */
const mismatched = detector('mismatch', { ...fp32(640, 640), format: 'yolov8' });
mismatched.served.inputs = [{ name: 'images', datatype: 'FP32', shape: [-1, 3, 320, 320] }];
const notReady = detector('not-ready', { ...fp32(64, 64), format: 'yolov8' });
notReady.served.ready = false;
const wrongOutput = detector('wrong-output-meta', { ...fp32(64, 64), format: 'yolov8' });
wrongOutput.served.outputs = [{ name: 'output0', datatype: 'FP32', shape: [-1, 84, -1] }];

describe('remote CV models in tensor mode (Open Inference Protocol, YOLO tensors)', function () {
  this.timeout(60_000);
  let inference: OpenInferenceServer;
  let server: TestServer;
  let t: ReturnType<typeof cvTenant>;
  let observationId: string;

  before(async () => {
    const all = [...models, mismatched, notReady, wrongOutput];
    inference = await startOpenInferenceServer(all.map((m) => m.served));
    server = await startTestServer({
      CV_JOB_TIMEOUT: '20s',
      CV_REMOTE_MODELS: JSON.stringify(all.map((m) => ({ ...m.entry, url: inference.url }))),
    });
    const tenant = await withTenant(server, 'tensor');
    t = cvTenant(
      server.url,
      server.stores,
      tenant.tenantId,
      await tenant.key(['cv:read', 'cv:write', 'observations:write']),
    );
    observationId = await t.observe('coloured rectangles');
    await t.upload(observationId, await sceneImage(image.width, image.height, rects));
  });
  after(async () => {
    await server.close();
    await inference.close();
  });

  const run = async (model: string) => {
    const started = Date.now();
    const job = await t.finished((await t.submit({ observationId, model })).id, 30_000, 50);
    return { job, ms: Date.now() - started };
  };
  const lastInfer = (model: string) =>
    inference.calls.filter((c) => c.model === model && c.method === 'POST').at(-1)!;

  const expectScene = (detections: { label: string; confidence: number; bbox: Bbox }[], names = labels) => {
    expect(detections.map((d) => d.label).sort()).to.deep.equal([...names].sort());
    rects.forEach((_, i) => {
      const found = detections.find((d) => d.label === names[i])!;
      expect(iou(found.bbox, truth[i]!), `${names[i]}: ${JSON.stringify(found.bbox)}`).to.be.above(0.9);
      expect(found.confidence).to.equal(0.92);
    });
  };

  describe('a YOLOv8 detector taking 640 × 640 NCHW FP32', () => {
    let job: any;
    before(async () => {
      job = (await run('scene-v8')).job;
    });

    it('finds each rectangle once, at its place in the image, with its label; duplicates and noise are gone', () => {
      expect(job.status, JSON.stringify(job.error)).to.equal('completed');
      expectScene(job.result.detections);
    });

    it('sends a [1, 3, 640, 640] FP32 tensor: the image letterboxed on grey 114, channels planar, × 1/255', () => {
      const call = lastInfer('scene-v8');
      expect(call.path).to.equal('/v2/models/scene-v8/infer');
      const [tensor] = call.body!.inputs;
      expect(tensor).to.deep.include({ name: 'images', shape: [1, 3, 640, 640], datatype: 'FP32' });
      expect(tensor!.data).to.have.length(3 * 640 * 640);
      const input = fp32(640, 640);
      const at = (x: number, y: number) => [0, 1, 2].map((c) => channelAt(tensor!.data, input, x, y, c));
      // 480 × 320 → 640 × 427, 106 rows of padding above: the top band is grey 114.
      expect(tensor!.data[0]).to.be.closeTo(114 / 255, 1e-6);
      for (const value of at(320, 50)) expect(value).to.be.closeTo(114, 0.01);
      // The middle of the red rectangle (100, 70) is at (133, 106 + 93).
      at(133, 199).forEach((value, c) => expect(value).to.be.closeTo(colours[0]![c]!, 1));
      // The grey background (160) beside it.
      for (const value of at(5, 200)) expect(value).to.be.closeTo(160, 1);
    });

    it('sums the run up: counts, the image, the model, the time and the parameters', () => {
      const { summary } = job.result;
      expect(summary).to.deep.include({
        counts: { blue: 1, green: 1, red: 1 },
        image: { width: 480, height: 320 },
        model: { name: 'scene-v8', version: '1' },
        parameters: { minConfidence: 0.3, maxDetections: 100, iouThreshold: 0.45 },
      });
      expect(summary.inferenceMs).to.be.a('number').and.to.be.at.least(0);
    });

    it('asks the server whether the model is ready and what it takes before its first run only', () => {
      const gets = inference.calls
        .filter((c) => c.model === 'scene-v8' && c.method === 'GET')
        .map((c) => c.path);
      expect(gets).to.deep.equal(['/v2/models/scene-v8/ready', '/v2/models/scene-v8']);
    });
  });

  it('reads the transposed YOLOv8 output [1, N, 84] with the COCO labels, at the remote name and version', async () => {
    const { job } = await run('scene-v8-coco');
    expect(job.status, JSON.stringify(job.error)).to.equal('completed');
    expectScene(job.result.detections, ['person', 'bicycle', 'car']);
    expect(lastInfer('yolov8n').path).to.equal('/v2/models/yolov8n/versions/2/infer');
    expect(job.result.summary.model).to.deep.equal({ name: 'yolov8n', version: '2' });
  });

  it('reads a YOLOv5 output (objectness × class score) from a 320 × 256 NHWC input', async () => {
    const { job } = await run('scene-v5-nhwc');
    expect(job.status, JSON.stringify(job.error)).to.equal('completed');
    expect(job.result.detections).to.have.length(3);
    expectScene(job.result.detections);
    const [tensor] = lastInfer('scene-v5-nhwc').body!.inputs;
    expect(tensor).to.deep.include({ shape: [1, 256, 320, 3], datatype: 'FP32' });
    // 480 × 320 → 320 × 213 (scale 2/3), 21 rows of padding above; red's middle (100, 70) → (67, 21 + 47).
    const input = fp32(320, 256, 'NHWC');
    [0, 1, 2].forEach((c) => {
      expect(channelAt(tensor!.data, input, 67, 68, c)).to.be.closeTo(colours[0]![c]!, 1);
      expect(channelAt(tensor!.data, input, 10, 5, c)).to.be.closeTo(114, 0.01);
    });
  });

  it('sends UINT8 as the bytes themselves, stretched to 416 × 416 without padding', async () => {
    const { job } = await run('scene-uint8');
    expect(job.status, JSON.stringify(job.error)).to.equal('completed');
    expectScene(job.result.detections);
    const [tensor] = lastInfer('scene-uint8').body!.inputs;
    expect(tensor).to.deep.include({ shape: [1, 416, 416, 3], datatype: 'UINT8' });
    expect(tensor!.data.every((v) => Number.isInteger(v) && v >= 0 && v <= 255)).to.equal(true);
    // No band: the top-left corner is the grey background (160); red's middle (100, 70) → (87, 91).
    expect(tensor!.data.slice(0, 3)).to.deep.equal([160, 160, 160]);
    const input: SceneInput = { width: 416, height: 416, layout: 'NHWC', datatype: 'UINT8', scale: 1 };
    [0, 1, 2].forEach((c) =>
      expect(channelAt(tensor!.data, input, 87, 91, c)).to.be.closeTo(colours[0]![c]!, 1),
    );
  });

  it('lists a tensor model with its classes and what it returns', async () => {
    const response = await t.api('/cv-models');
    const listed = response.body.data.find((m: { name: string }) => m.name === 'scene-v8');
    expect(listed).to.deep.include({ name: 'scene-v8', kind: 'remote', classes: labels });
    expect(listed.returns.summary).to.have.all.keys('counts', 'image', 'model', 'inferenceMs', 'parameters');
    const coco = response.body.data.find((m: { name: string }) => m.name === 'scene-v8-coco');
    expect(coco.classes).to.have.length(80);
    expect(coco.classes[0]).to.equal('person');
  });

  const refused: [string, RegExp][] = [
    ['wrong-name', /no output named output0 \(it has "output1"\)/],
    ['wrong-datatype', /output output0 has datatype "BYTES"; it must be FP32/],
    ['shape-mismatch', /output output0 has shape \[1, 7, 10\] but 69 data elements/],
    ['huge-shape', /output output0 has shape \[1, 7, 1000000000000000\] but 7 data elements/],
    ['not-numbers', /data element 3 is "0.5", not a finite number/],
    ['infinite', /data element 4 is Infinity, not a finite number/],
    ['class-count', /shape \[1, 85, 2\] has 81 classes per box .* but labels names 3/],
    ['negative-size', /box 0 has a negative width \(-5\)/],
    ['logits', /box 0 has a class 0 score of 3.2, outside 0..1/],
    ['over-cap', /larger than 16777216 bytes/],
  ];
  for (const [model, message] of refused) {
    it(`fails the job with model_reply_invalid for ${model}`, async () => {
      const { job } = await run(model);
      expect(job.status).to.equal('failed');
      expect(job.error.code, job.error.message).to.equal('model_reply_invalid');
      expect(job.error.message).to.match(message);
    });
  }

  it('clips boxes that reach past the image', async () => {
    const { job } = await run('out-of-range');
    expect(job.status, JSON.stringify(job.error)).to.equal('completed');
    expect(job.result.detections).to.have.length(2);
    for (const { bbox } of job.result.detections) {
      expect(bbox.x).to.be.at.least(0);
      // Rounding to 4 decimals may add 1e-4; the result contract allows 1e-3.
      expect(bbox.x + bbox.width).to.be.at.most(1.001);
      expect(bbox.y + bbox.height).to.be.at.most(1.001);
    }
  });

  it('copes with 100,000 candidates above the threshold quickly, keeping maxDetections', async () => {
    const { job, ms } = await run('flood');
    expect(job.status, JSON.stringify(job.error)).to.equal('completed');
    expect(job.result.detections).to.have.length(100);
    expect(ms).to.be.below(5000);
  });

  it('accepts a reply of exactly 16 MiB', async () => {
    const { job } = await run('at-cap');
    expect(job.status, JSON.stringify(job.error)).to.equal('completed');
    expect(job.result.detections).to.have.length(1);
  });

  const mismatches: [string, RegExp][] = [
    [
      'mismatch',
      /does not match its configuration: input images has shape \[-1, 3, 320, 320\] on the server, not \[1, 3, 640, 640\]/,
    ],
    ['not-ready', /The model not-ready is not ready on its server \(not-ready: HTTP 400/],
    [
      'wrong-output-meta',
      /output output0 has shape \[-1, 84, -1\] on the server, not \[1, 7, N\] for 3 labels/,
    ],
  ];
  for (const [model, message] of mismatches) {
    it(`fails with model_error, naming the mismatch, when the server's ${model} model is not as configured`, async () => {
      const before = inference.calls.filter((c) => c.method === 'POST').length;
      const { job } = await run(model);
      expect(job.error.code, job.error.message).to.equal('model_error');
      expect(job.error.message).to.match(message);
      expect(inference.calls.filter((c) => c.method === 'POST').length).to.equal(before);
    });
  }
});
