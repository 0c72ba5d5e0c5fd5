import { expect } from 'chai';
import { randomUUID } from 'node:crypto';
import { pino } from 'pino';
import { pendingCvJobsProjection } from '../../projections/cv-jobs.js';
import { eventMetadata } from '../../src/core/command-handler.js';
import { systemClock } from '../../src/core/ids.js';
import { streamName } from '../../src/core/streams.js';
import { modelRegistry } from '../../src/cv/models/registry.js';
import { cvWorker } from '../../src/cv/worker.js';
import { cvTenant } from '../support/cv.js';
import { testImage } from '../support/images.js';
import { startReceiver } from '../support/receiver.js';
import { request, startTestServer, withTenant, type TestServer } from '../support/server.js';
import { eventually, sleep } from '../support/wait.js';

const twoDark = [
  { x: 100, y: 120, width: 100, height: 80, value: 30 },
  { x: 400, y: 300, width: 100, height: 80, value: 30 },
];
const photo = () => testImage({ width: 640, height: 480, format: 'png', background: 210, boxes: twoDark });
const white = () => testImage({ width: 640, height: 480, format: 'png', background: 255 });
const truncatedJpeg = async () => {
  const whole = await testImage({ width: 640, height: 480, format: 'jpeg', background: 210, boxes: twoDark });
  return whole.subarray(0, Math.floor(whole.length * 0.6));
};

const secret = 'whsec-cv-0123456789abcdef';

describe('CV jobs over HTTP', () => {
  let server: TestServer;
  let t: ReturnType<typeof cvTenant>;
  let other: ReturnType<typeof cvTenant>;
  let readOnly: ReturnType<typeof cvTenant>;
  let withMedia: string;

  before(async () => {
    server = await startTestServer({
      WEBHOOK_ALLOW_HTTP: 'true',
      WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true',
    });
    const tenant = await withTenant(server, 'cvacme');
    const scopes = ['cv:read', 'cv:write', 'observations:write', 'observations:read', 'webhooks:manage'];
    t = cvTenant(server.url, server.stores, tenant.tenantId, await tenant.key(scopes));
    readOnly = cvTenant(server.url, server.stores, tenant.tenantId, await tenant.key(['cv:read']));
    const second = await withTenant(server, 'cvother');
    other = cvTenant(server.url, server.stores, second.tenantId, await second.key(scopes));
    withMedia = await t.observe('two dark stones');
    await t.upload(withMedia, await photo());
  });
  after(async () => server.close());

  /** Every event written to any CV job stream of the store so far. */
  /** Job requests only: the worker may still be appending starts and outcomes of earlier jobs meanwhile. */
  const cvJobEvents = async () =>
    (
      await server.stores.eventStore.readAll({
        filter: { streamPrefixes: ['cvjob-'], eventTypes: ['CvJobRequested'] },
        maxCount: 100_000,
      })
    ).events;

  describe('a job', () => {
    it('is accepted with 202, queued, with Location, ETag and X-Position, then runs to completion', async () => {
      const response = await t.api('/cv-jobs', {
        method: 'POST',
        body: { observationId: withMedia, model: 'object-proposals' },
      });
      expect(response.status, JSON.stringify(response.body)).to.equal(202);
      const job = response.body;
      expect(job.id).to.match(/^j_[0-9a-z]{26}$/);
      expect(response.headers.get('location')).to.equal(`/v1/tenants/${t.tenantId}/cv-jobs/${job.id}`);
      expect(response.headers.get('etag')).to.equal('"0"');
      expect(Number(response.headers.get('x-position'))).to.be.above(0);
      expect(job).to.deep.include({
        tenantId: t.tenantId,
        observationId: withMedia,
        model: 'object-proposals',
        status: 'queued',
        attempts: 0,
        result: null,
        error: null,
        startedAt: null,
        finishedAt: null,
        version: 0,
      });
      expect(job.mediaId).to.match(/^m_[0-9a-f]{26}$/);
      expect(job.sha256).to.match(/^[0-9a-f]{64}$/);

      const done = await t.finished(job.id);
      expect(done).to.deep.include({ status: 'completed', attempts: 1, error: null, version: 2 });
      expect(Date.parse(done.startedAt)).to.be.at.least(Date.parse(job.createdAt));
      expect(Date.parse(done.finishedAt)).to.be.at.least(Date.parse(done.startedAt));
      const boxes = (done.result.detections as { bbox: Record<string, number>; label: string }[])
        .map((d) => d.bbox)
        .sort((a, b) => a.y! - b.y!);
      expect(boxes).to.have.length(2);
      const expected = twoDark.map((b) => ({
        x: b.x / 640,
        y: b.y / 480,
        width: b.width / 640,
        height: b.height / 480,
      }));
      boxes.forEach((box, index) => {
        for (const key of ['x', 'y', 'width', 'height'] as const)
          expect(box[key]).to.be.closeTo(expected[index]![key], 0.005);
      });
      expect(done.result.summary).to.deep.include({ objects: 2, polarity: 'dark' });
      const events = await server.stores.eventStore.readStream(streamName('cvjob', t.tenantId, job.id));
      expect(events.map((e) => e.type)).to.deep.equal(['CvJobRequested', 'CvJobStarted', 'CvJobCompleted']);
      expect(events[1]!.metadata.actor).to.equal('system:cv-worker');
      expect(events[0]!.metadata.actor).to.match(/^apikey:k_/);
    });

    it('runs image-quality: an all-white image is unusable, clipped', async () => {
      const observationId = await t.observe('snow');
      await t.upload(observationId, await white());
      const job = await t.submit({ observationId, model: 'image-quality' });
      const done = await t.finished(job.id);
      expect(done.status).to.equal('completed');
      expect(done.result.detections).to.deep.equal([]);
      expect(done.result.summary).to.deep.include({ usable: false });
      expect(done.result.summary.reasons).to.include('clipped');
    });

    it("analyses the observation's latest medium by default, or the one named", async () => {
      const observationId = await t.observe('two images');
      const first = await t.upload(observationId, await white());
      const second = await t.upload(observationId, await photo());
      expect(((await t.submit({ observationId, model: 'image-quality' })) as any).mediaId).to.equal(
        second.id,
      );
      const named = (await t.submit({ observationId, model: 'image-quality', mediaId: first.id })) as any;
      expect(named.mediaId).to.equal(first.id);
      expect(named.sha256).to.equal(first.sha256);
      expect((await t.finished(named.id)).result.summary.usable).to.equal(false);
    });

    it('fails with media_unreadable for a truncated image, and the service carries on', async () => {
      const observationId = await t.observe('broken file');
      await t.attachDirectly(observationId, await truncatedJpeg());
      const jobs = await Promise.all(
        ['object-proposals', 'image-quality'].map((model) => t.submit({ observationId, model })),
      );
      for (const job of jobs) {
        const done = await t.finished(job.id);
        expect(done).to.deep.include({ status: 'failed', result: null });
        expect(done.error.code).to.equal('media_unreadable');
        expect(done.error.message).to.match(/^The image cannot be decoded: /);
      }
      expect((await request(`${server.url}/health`)).status).to.equal(200);
      const fine = await t.submit({ observationId: withMedia, model: 'object-proposals' });
      expect((await t.finished(fine.id)).status).to.equal('completed');
    });

    it('fails with media_missing when the bytes are not in the blob store', async () => {
      const observationId = await t.observe('lost file');
      await t.attachDirectly(observationId, Buffer.from(`never stored ${randomUUID()}`), { store: false });
      const job = await t.submit({ observationId, model: 'object-proposals' });
      const done = await t.finished(job.id);
      expect(done.status).to.equal('failed');
      expect(done.error.code).to.equal('media_missing');
    });

    it('is read from its stream: 404 for an unknown id and for another tenant', async () => {
      const job = await t.submit({ observationId: withMedia, model: 'image-quality' });
      expect((await t.api(`/cv-jobs/${job.id}`)).status).to.equal(200);
      expect((await t.api('/cv-jobs/j_00000000000000000000000000')).status).to.equal(404);
      // Another tenant's key on this tenant's path, and this job's id under the other tenant.
      expect((await other.api(`/cv-jobs/${job.id}`)).status).to.equal(404);
      const foreign = await request(`${server.url}/v1/tenants/${t.tenantId}/cv-jobs/${job.id}`, {
        headers: { 'X-API-Key': (await withTenant(server, 'cvthird')).adminKey },
      });
      expect(foreign.status).to.equal(404);
    });
  });

  describe('a refused request', () => {
    const refusals: [string, () => Record<string, unknown>, number, string | null][] = [
      ['an unknown model', () => ({ observationId: withMedia, model: 'yolo-v99' }), 400, 'model'],
      [
        'a model name with a path',
        () => ({ observationId: withMedia, model: '../../etc/passwd' }),
        400,
        'model',
      ],
      [
        'a model name with a slash',
        () => ({ observationId: withMedia, model: 'remote/object-proposals' }),
        400,
        'model',
      ],
      [
        'a model name in capitals',
        () => ({ observationId: withMedia, model: 'IMAGE-QUALITY' }),
        400,
        'model',
      ],
      ['no model', () => ({ observationId: withMedia }), 400, 'model'],
      ['no observation', () => ({ model: 'image-quality' }), 400, 'observationId'],
      [
        'an observation id that is no id',
        () => ({ observationId: 'o/../x', model: 'image-quality' }),
        400,
        'observationId',
      ],
      [
        'an unknown field',
        () => ({ observationId: withMedia, model: 'image-quality', priority: 1 }),
        400,
        'priority',
      ],
      [
        'an unknown observation',
        () => ({ observationId: 'o_00000000000000000000000000', model: 'image-quality' }),
        404,
        null,
      ],
      [
        'an unknown medium',
        () => ({ observationId: withMedia, model: 'image-quality', mediaId: 'm_0000000000' }),
        404,
        null,
      ],
    ];
    for (const [name, body, status, path] of refusals) {
      it(`answers ${status} to ${name}${path ? `, naming ${path}` : ''}, and writes nothing`, async () => {
        const before = (await cvJobEvents()).length;
        const response = await t.api('/cv-jobs', { method: 'POST', body: body() });
        expect(response.status, JSON.stringify(response.body)).to.equal(status);
        expect(response.headers.get('content-type')).to.match(/^application\/problem\+json/);
        if (path) expect(response.body.errors.map((e: { path: string }) => e.path)).to.include(path);
        expect((await cvJobEvents()).length).to.equal(before);
      });
    }

    it('answers 400 naming observationId to an observation without media, and writes nothing', async () => {
      const observationId = await t.observe('no pictures');
      const before = (await cvJobEvents()).length;
      const response = await t.api('/cv-jobs', {
        method: 'POST',
        body: { observationId, model: 'image-quality' },
      });
      expect(response.status).to.equal(400);
      expect(response.body.errors).to.deep.equal([
        { path: 'observationId', message: 'has no media to analyse; upload an image to it first' },
      ]);
      expect((await cvJobEvents()).length).to.equal(before);
    });

    it("answers 404 to another tenant's observation, and writes nothing", async () => {
      const before = (await cvJobEvents()).length;
      const response = await other.api('/cv-jobs', {
        method: 'POST',
        body: { observationId: withMedia, model: 'image-quality' },
      });
      expect(response.status).to.equal(404);
      expect((await cvJobEvents()).length).to.equal(before);
    });

    it('answers 403 naming cv:write to a key that may only read', async () => {
      const response = await readOnly.api('/cv-jobs', {
        method: 'POST',
        body: { observationId: withMedia, model: 'image-quality' },
      });
      expect(response.status).to.equal(403);
      expect(response.body.requiredScope).to.equal('cv:write');
      // RFC 6750 §3.1, for clients that read the scope from the header.
      expect(response.headers.get('www-authenticate')).to.equal(
        'Bearer realm="observation-service", error="insufficient_scope", scope="cv:write"',
      );
    });
  });

  describe('the list', () => {
    let a: string;
    let b: string;
    const ids = (response: { body: { data: { id: string }[] } }) => response.body.data.map((job) => job.id);

    before(async () => {
      a = await t.observe('list a');
      b = await t.observe('list b');
      await t.upload(a, await photo());
      await t.upload(b, await white());
    });

    it('filters by observation, model and status, newest first, and pages', async () => {
      const made: { id: string; observationId: string; model: string }[] = [];
      for (const [observationId, model] of [
        [a, 'object-proposals'],
        [a, 'image-quality'],
        [b, 'object-proposals'],
        [a, 'object-proposals'],
      ] as const) {
        made.push({ ...(await t.submit({ observationId, model })), observationId, model });
      }
      for (const job of made) await t.finished(job.id);
      const position = (await t.api(`/cv-jobs/${made.at(-1)!.id}`)).headers.get('etag');
      expect(position).to.equal('"2"');
      // The last job is finished in its stream; wait for the list to show all four finished.
      const byObservation = await eventually(async () => {
        const response = await t.api(`/cv-jobs?observationId=${a}&status=completed`);
        return response.body.data.length === 3 ? response : undefined;
      });
      expect(ids(byObservation)).to.deep.equal([made[3]!.id, made[1]!.id, made[0]!.id]);
      const byModel = await t.api(`/cv-jobs?observationId=${a}&model=object-proposals`);
      expect(ids(byModel)).to.deep.equal([made[3]!.id, made[0]!.id]);
      const both = await t.api(`/cv-jobs?observationId=${b}&model=object-proposals&status=completed`);
      expect(ids(both)).to.deep.equal([made[2]!.id]);
      expect(ids(await t.api(`/cv-jobs?observationId=${b}&status=failed`))).to.deep.equal([]);

      const first = await t.api(`/cv-jobs?observationId=${a}&limit=2`);
      expect(ids(first)).to.deep.equal([made[3]!.id, made[1]!.id]);
      expect(first.body.nextCursor).to.be.a('string');
      const second = await t.api(`/cv-jobs?observationId=${a}&limit=2&cursor=${first.body.nextCursor}`);
      expect(ids(second)).to.deep.equal([made[0]!.id]);
      expect(second.body.nextCursor).to.equal(null);
      // A cursor belongs to its filters.
      const mismatched = await t.api(`/cv-jobs?observationId=${b}&limit=2&cursor=${first.body.nextCursor}`);
      expect(mismatched.status).to.equal(400);
    });

    it('shows a job just written with minPosition, and answers with X-Projection-Position', async () => {
      const response = await t.api('/cv-jobs', {
        method: 'POST',
        body: { observationId: b, model: 'image-quality' },
      });
      const listed = await t.api(
        `/cv-jobs?minPosition=${response.headers.get('x-position')}&observationId=${b}`,
      );
      expect(listed.status).to.equal(200);
      expect(ids(listed)).to.include(response.body.id);
      expect(Number(listed.headers.get('x-projection-position'))).to.be.at.least(
        Number(response.headers.get('x-position')),
      );
    });

    it("lists only the tenant's own jobs", async () => {
      const response = await other.api('/cv-jobs');
      expect(response.status).to.equal(200);
      expect(response.body.data).to.deep.equal([]);
    });

    const badQueries: [string, string][] = [
      ['status=done', 'status'],
      ['model=../x', 'model'],
      ['limit=0', 'limit'],
      ['observationId=a/b', 'observationId'],
      ['sort=createdAt', 'sort'],
    ];
    for (const [query, path] of badQueries) {
      it(`answers 400 naming ${path} to ?${query}`, async () => {
        const response = await t.api(`/cv-jobs?${query}`);
        expect(response.status).to.equal(400);
        expect(response.body.errors.map((e: { path: string }) => e.path)).to.deep.equal([path]);
      });
    }
  });

  describe('the models', () => {
    it('lists the built-in models and what each returns, to cv:read', async () => {
      const response = await readOnly.api('/cv-models');
      expect(response.status).to.equal(200);
      expect(response.body.nextCursor).to.equal(null);
      expect(response.body.data.map((m: { name: string; kind: string }) => [m.name, m.kind])).to.deep.equal([
        ['image-quality', 'builtin'],
        ['objects-coco', 'builtin'],
        ['object-proposals', 'builtin'],
      ]);
      const quality = response.body.data[0];
      expect(quality.description).to.be.a('string');
      expect(quality.returns.detections).to.equal('always empty');
      expect(quality.returns.summary).to.have.keys(
        'usable',
        'reasons',
        'sharpness',
        'meanLuminance',
        'clipping',
        'resolution',
      );
      expect((await readOnly.api('/cv-models?limit=1')).status).to.equal(400);
    });
  });

  describe('workers racing for the same job', () => {
    it('start an abandoned job exactly once more, and it completes exactly once', async () => {
      // A job whose worker died an hour ago: requested and started, never finished.
      const jobId = `j_${randomUUID().replace(/-/g, '').slice(0, 26)}`;
      const media = await t.upload(withMedia, await photo());
      const stream = streamName('cvjob', t.tenantId, jobId);
      const context = {
        tenantId: t.tenantId,
        actor: 'test',
        correlationId: 'c',
        causationId: null,
        now: new Date(Date.now() - 3_600_000),
        newEventId: () => randomUUID(),
      };
      const event = (type: string, data: unknown) => ({
        id: randomUUID(),
        type,
        data,
        metadata: eventMetadata(context),
      });
      const appended = await server.stores.eventStore.appendToStream(
        stream,
        [
          event('CvJobRequested', {
            jobId,
            observationId: withMedia,
            model: 'object-proposals',
            mediaId: media.id,
            sha256: media.sha256,
          }),
          event('CvJobStarted', { jobId, attempt: 1, startedBy: 'instance:dead' }),
        ],
        'no_stream',
      );
      await server.service.projections
        .of(pendingCvJobsProjection)
        .runner.waitFor(appended.lastPosition, 5000);
      // Four more workers on the same stores, besides the service's own, sweep at once.
      const workers = [1, 2, 3, 4].map(() =>
        cvWorker({
          ...server.stores,
          models: modelRegistry(),
          clock: systemClock,
          logger: pino({ level: 'silent' }),
          pendingCollection: pendingCvJobsProjection.collection.name,
          settings: { jobTimeoutMs: 10_000, concurrency: 2, staleMarginMs: 1000, maxAttempts: 3 },
        }),
      );
      await Promise.all([...workers.map((worker) => worker.sweep()), server.service.cvWorker.sweep()]);
      const done = await t.finished(jobId);
      expect(done).to.deep.include({ status: 'completed', attempts: 2 });
      // On purpose: a worker that lost the race has this long to append a second outcome, which it must not.
      await sleep(1500);
      const types = (await server.stores.eventStore.readStream(stream)).map((e) => e.type);
      expect(types).to.deep.equal(['CvJobRequested', 'CvJobStarted', 'CvJobStarted', 'CvJobCompleted']);
      await Promise.all(workers.map((worker) => worker.stop()));
    });
  });

  describe('webhooks', () => {
    it('deliver cv.job.completed and cv.job.failed with exactly the documented data', async () => {
      const hooks = await startReceiver(secret);
      try {
        const subscribed = await t.api('/webhooks', {
          method: 'POST',
          body: { url: hooks.url, events: ['cv.job.completed', 'cv.job.failed'], secret },
        });
        expect(subscribed.status, JSON.stringify(subscribed.body)).to.equal(201);
        const broken = await t.observe('broken for the webhook');
        await t.attachDirectly(broken, await truncatedJpeg());
        const good = await t.submit({ observationId: withMedia, model: 'object-proposals' });
        const completed = await t.finished(good.id);
        const bad = await t.submit({ observationId: broken, model: 'image-quality' });
        const failed = await t.finished(bad.id);

        // Jobs of earlier tests may finish while the subscription is active: look at these two only.
        const ours = () => hooks.received.filter((r) => [good.id, bad.id].includes(r.body?.data?.jobId));
        await eventually(
          () => Promise.resolve(ours().length >= 2 ? true : undefined),
          15_000,
          'two deliveries',
        );
        const received = ours();
        const byType = Object.fromEntries(received.map((r) => [r.body.type as string, r]));
        expect(Object.keys(byType).sort()).to.deep.equal(['cv.job.completed', 'cv.job.failed']);
        for (const delivery of received) expect(delivery.verified).to.equal(true);

        const events = async (jobId: string) =>
          server.stores.eventStore.readStream(streamName('cvjob', t.tenantId, jobId));
        const completedEvent = (await events(good.id)).at(-1)!;
        expect(byType['cv.job.completed']!.body).to.deep.equal({
          id: `evt_${completedEvent.id}`,
          type: 'cv.job.completed',
          tenantId: t.tenantId,
          timestamp: completedEvent.metadata.occurredAt,
          data: {
            jobId: good.id,
            observationId: withMedia,
            model: 'object-proposals',
            status: 'completed',
            result: { detections: completed.result.detections, summary: completed.result.summary },
          },
        });
        expect(byType['cv.job.completed']!.body.data.result.detections).to.have.length(2);
        const failedEvent = (await events(bad.id)).at(-1)!;
        expect(byType['cv.job.failed']!.body).to.deep.equal({
          id: `evt_${failedEvent.id}`,
          type: 'cv.job.failed',
          tenantId: t.tenantId,
          timestamp: failedEvent.metadata.occurredAt,
          data: {
            jobId: bad.id,
            observationId: broken,
            model: 'image-quality',
            status: 'failed',
            error: { code: 'media_unreadable', message: failed.error.message },
          },
        });
        // Exactly one delivery each: a sweep or two later (on purpose), still two.
        await sleep(1500);
        expect(ours()).to.have.length(2);
      } finally {
        await hooks.close();
      }
    });
  });
});
