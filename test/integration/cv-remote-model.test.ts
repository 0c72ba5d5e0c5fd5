import { availableParallelism } from 'node:os';
import { expect } from 'chai';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { ConfigError, loadConfig } from '../../src/config.js';
import { sha256Of } from '../../src/media/hash.js';
import { tempDir } from '../support/adapters.js';
import { cvTenant } from '../support/cv.js';
import { testImage } from '../support/images.js';
import { inferReply, startInferenceServer, type InferenceServer } from '../support/inference-server.js';
import { freePort } from '../support/process.js';
import { startTestServer, withTenant, type TestServer } from '../support/server.js';

const detections = [
  { label: 'fox', confidence: 0.91, bbox: { x: 0.1, y: 0.2, width: 0.3, height: 0.25 }, trackId: 4 },
  { label: 'stone', confidence: 0.42, bbox: { x: 0.6, y: 0.6, width: 0.2, height: 0.1 } },
];

describe('remote CV models over the Open Inference Protocol', () => {
  let inference: InferenceServer;
  let server: TestServer;
  let t: ReturnType<typeof cvTenant>;
  let observationId: string;
  let imageBytes: Buffer;

  before(async () => {
    inference = await startInferenceServer(({ model }) => {
      switch (model) {
        case 'detector':
          return { body: inferReply(detections, { objects: 2, model: 'detector-v1' }, model) };
        case 'garbled':
          return { rawBody: '<html>Bad gateway</html>' };
        case 'no-detections':
          return {
            body: {
              model_name: model,
              outputs: [{ name: 'scores', datatype: 'FP32', shape: [1], data: [1] }],
            },
          };
        case 'pixels':
          return {
            body: inferReply([
              { label: 'fox', confidence: 0.9, bbox: { x: 64, y: 48, width: 100, height: 80 } },
            ]),
          };
        case 'broken':
          return { status: 500, body: { error: 'CUDA out of memory' } };
        case 'slow':
          return { delayMs: 300, body: inferReply([], { slow: true }) };
        default:
          return 'hang';
      }
    });
    const closedPort = await freePort();
    const model = (name: string, timeout = '5s', url = inference.url) => ({ name, url, timeout });
    server = await startTestServer({
      CV_JOB_TIMEOUT: '3s',
      CV_REMOTE_MODELS: JSON.stringify([
        { ...model('detector'), description: 'Foxes and stones' },
        model('garbled'),
        model('no-detections'),
        model('pixels'),
        model('broken'),
        model('slow'),
        model('hanging', '1s'),
        model('hanging-long', '30s'),
        model('down', '5s', `http://127.0.0.1:${closedPort}`),
      ]),
    });
    const tenant = await withTenant(server, 'remote');
    t = cvTenant(
      server.url,
      server.stores,
      tenant.tenantId,
      await tenant.key(['cv:read', 'cv:write', 'observations:write']),
    );
    observationId = await t.observe('for the inference server');
    imageBytes = await testImage({ width: 320, height: 240, format: 'jpeg', background: 200 });
    await t.upload(observationId, imageBytes);
  });
  after(async () => {
    await server.close();
    await inference.close();
  });

  const run = async (model: string, id = observationId) => {
    const job = await t.submit({ observationId: id, model });
    const started = Date.now();
    const done = await t.finished(job.id, 20_000);
    return { job: done, ms: Date.now() - started };
  };

  it('posts the image as one base64 BYTES input to /v2/models/{name}/infer and keeps the reply', async () => {
    const before = inference.calls.length;
    const { job } = await run('detector');
    expect(job.status, JSON.stringify(job.error)).to.equal('completed');
    expect(job.result).to.deep.equal({ detections, summary: { objects: 2, model: 'detector-v1' } });
    const call = inference.calls.slice(before).find((c) => c.model === 'detector')!;
    expect(call.path).to.equal('/v2/models/detector/infer');
    expect(call.contentType).to.equal('application/json');
    expect(call.body).to.have.all.keys('inputs');
    expect(call.body.inputs).to.have.length(1);
    const [input] = call.body.inputs;
    expect(input).to.have.all.keys('name', 'shape', 'datatype', 'data');
    expect(input).to.deep.include({ name: 'image', shape: [1], datatype: 'BYTES' });
    expect(sha256Of(Buffer.from(input.data[0], 'base64'))).to.equal(sha256Of(imageBytes));
  });

  it('lists the remote models beside the built-in ones', async () => {
    const response = await t.api('/cv-models');
    const detector = response.body.data.find((m: { name: string }) => m.name === 'detector');
    expect(detector).to.deep.include({ name: 'detector', kind: 'remote', description: 'Foxes and stones' });
    expect(detector.returns.detections).to.be.a('string');
    expect(response.body.data.map((m: { name: string }) => m.name)).to.include.members([
      'image-quality',
      'object-proposals',
      'hanging',
      'down',
    ]);
  });

  const failures: [string, string, RegExp][] = [
    ['a reply that is not JSON', 'garbled', /not JSON/],
    ['a reply without a detections output', 'no-detections', /no output named detections/],
    ['boxes in pixels', 'pixels', /detections\.0\.bbox\.x must be a number from 0 to 1/],
  ];
  for (const [name, model, message] of failures) {
    it(`fails the job with model_reply_invalid for ${name}`, async () => {
      const { job } = await run(model);
      expect(job.status).to.equal('failed');
      expect(job.error.code).to.equal('model_reply_invalid');
      expect(job.error.message).to.match(message);
    });
  }

  it('fails the job with model_error for a 500, quoting the start of the answer', async () => {
    const { job } = await run('broken');
    expect(job.error).to.deep.equal({
      code: 'model_error',
      message: 'The model broken answered HTTP 500: {"error":"CUDA out of memory"}',
    });
  });

  it('fails the job with model_unreachable when nothing listens', async () => {
    const { job } = await run('down');
    expect(job.error.code).to.equal('model_unreachable');
    expect(job.error.message).to.match(/^The model down cannot be reached: /);
  });

  it("fails a hanging model's job with timeout after the model's own time-out (1 s)", async () => {
    const { job } = await run('hanging');
    expect(job.error).to.deep.equal({
      code: 'timeout',
      message: 'The model hanging did not answer within 1000 ms',
    });
    const took = Date.parse(job.finishedAt) - Date.parse(job.startedAt);
    expect(took).to.be.within(900, 2500);
  });

  it('fails a hanging model with a longer time-out at CV_JOB_TIMEOUT (3 s)', async () => {
    const { job } = await run('hanging-long');
    expect(job.error).to.deep.equal({ code: 'timeout', message: 'The job did not finish within 3000 ms' });
    const took = Date.parse(job.finishedAt) - Date.parse(job.startedAt);
    expect(took).to.be.within(2900, 4500);
  });

  it('runs other jobs while models hang', async () => {
    const hanging = t.submit({ observationId, model: 'hanging-long' });
    const { job, ms } = await run('slow');
    expect(job.status).to.equal('completed');
    expect(ms).to.be.below(2500);
    await t.finished((await hanging).id, 20_000);
  });

  it('never sends an image it cannot decode: media_unreadable, and the server is not called', async () => {
    const broken = await t.observe('truncated for the remote model');
    const whole = await testImage({ width: 320, height: 240, format: 'png', background: 90 });
    await t.attachDirectly(broken, whole.subarray(0, whole.length - 200), { contentType: 'image/png' });
    const before = inference.calls.length;
    const { job } = await run('detector', broken);
    expect(job.error.code).to.equal('media_unreadable');
    expect(inference.calls.length).to.equal(before);
  });

  describe('a graceful restart in the middle of runs', function () {
    this.timeout(60_000);

    it('runs every job to completion exactly once after the restart', async () => {
      const { dir, remove } = tempDir();
      const env = {
        CV_JOB_TIMEOUT: '1s',
        CV_CONCURRENCY: '1',
        CV_REMOTE_MODELS: JSON.stringify([{ name: 'slow', url: inference.url, timeout: '5s' }]),
      };
      try {
        const first = await startTestServer(env, { dataDir: dir });
        const tenant = await withTenant(first, 'restart');
        const key = await tenant.key(['cv:read', 'cv:write', 'observations:write']);
        let r = cvTenant(first.url, first.stores, tenant.tenantId, key);
        const observation = await r.observe('restarted');
        await r.upload(observation, imageBytes);
        const before = inference.calls.length;
        const jobs = [];
        for (let i = 0; i < 3; i += 1)
          jobs.push((await r.submit({ observationId: observation, model: 'slow' })).id);
        // One runs (300 ms at the model), the others wait for the only slot: stop now.
        while (inference.calls.length === before) await new Promise((resolve) => setTimeout(resolve, 10));
        await first.close();

        const second = await startTestServer(env, { dataDir: dir });
        try {
          r = cvTenant(second.url, second.stores, tenant.tenantId, key);
          for (const id of jobs) expect((await r.finished(id, 30_000)).status).to.equal('completed');
          for (const id of jobs) {
            const types = (await second.stores.eventStore.readStream(`cvjob-${tenant.tenantId}_${id}`)).map(
              (event) => event.type,
            );
            expect(
              types.filter((type) => type === 'CvJobCompleted'),
              types.join(', '),
            ).to.have.length(1);
            expect(types.at(-1)).to.equal('CvJobCompleted');
          }
        } finally {
          await second.close();
        }
      } finally {
        remove();
      }
    });
  });

  describe('the models setting', () => {
    it('is read from CV_REMOTE_MODELS or from the file CV_MODELS_FILE', () => {
      const models = [{ name: 'detector', url: 'http://127.0.0.1:8080/', timeout: '10s' }];
      expect(loadConfig({ CV_REMOTE_MODELS: JSON.stringify(models) }).cv.remoteModels).to.deep.equal([
        { name: 'detector', url: 'http://127.0.0.1:8080', timeoutMs: 10_000 },
      ]);
      const { dir, remove } = tempDir();
      try {
        const file = join(dir, 'models.json');
        writeFileSync(file, JSON.stringify({ models }));
        expect(loadConfig({ CV_MODELS_FILE: file }).cv.remoteModels).to.have.length(1);
      } finally {
        remove();
      }
      const defaults = loadConfig({});
      expect(defaults.cv).to.deep.equal({
        jobTimeoutMs: 60_000,
        concurrency: 4,
        remoteModels: [],
        detector: { threads: Math.max(1, availableParallelism() - 1), modelsDir: null },
      });
    });

    const bad: [Record<string, string>, RegExp][] = [
      [{ CV_REMOTE_MODELS: '[{' }, /^CV_REMOTE_MODELS is not valid/],
      [
        { CV_REMOTE_MODELS: '[{"name":"../x","url":"http://x"}]' },
        /CV_REMOTE_MODELS is not valid: entry 0: name/,
      ],
      [{ CV_REMOTE_MODELS: '[{"name":"object-proposals","url":"http://x"}]' }, /taken/],
      [
        { CV_MODELS_FILE: '/nonexistent/models.json' },
        /^CV_MODELS_FILE \(\/nonexistent\/models.json\) is not valid/,
      ],
      [{ CV_REMOTE_MODELS: '[]', CV_MODELS_FILE: '/x.json' }, /not both/],
      [{ CV_JOB_TIMEOUT: '0' }, /CV_JOB_TIMEOUT=0 is not valid/],
      [{ CV_CONCURRENCY: 'many' }, /CV_CONCURRENCY=many is not valid/],
    ];
    for (const [env, message] of bad) {
      it(`refuses ${JSON.stringify(env)}`, () => {
        expect(() => loadConfig(env)).to.throw(ConfigError, message);
      });
    }
  });
});
