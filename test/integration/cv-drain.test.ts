import { expect } from 'chai';
import { cvTenant } from '../support/cv.js';
import { eventually } from '../support/events.js';
import { testImage } from '../support/images.js';
import { inferReply, startInferenceServer, type InferenceServer } from '../support/inference-server.js';
import { startTestServer, withTenant, type TestServer } from '../support/server.js';

/** A CV worker told to stop with a deadline, as the service's shutdown does (SHUTDOWN_TIMEOUT). */
describe('a CV worker stopping with a deadline', function () {
  this.timeout(30_000);
  let inference: InferenceServer;
  let server: TestServer;

  beforeEach(async () => {
    inference = await startInferenceServer(({ model }) =>
      model === 'slow' ? { delayMs: 700, body: inferReply([], { slow: true }) } : 'hang',
    );
    server = await startTestServer({
      CV_JOB_TIMEOUT: '30s',
      CV_REMOTE_MODELS: JSON.stringify([
        { name: 'slow', url: inference.url, timeout: '5s' },
        { name: 'hanging', url: inference.url, timeout: '30s' },
      ]),
    });
  });
  afterEach(async () => {
    await server.close();
    await inference.close();
  });

  const running = async (model: string) => {
    const tenant = await withTenant(server, 'drain');
    const t = cvTenant(
      server.url,
      server.stores,
      tenant.tenantId,
      await tenant.key(['cv:read', 'cv:write', 'observations:write']),
    );
    const observationId = await t.observe('drained');
    await t.upload(observationId, await testImage({ width: 64, height: 48, format: 'jpeg' }));
    const job = await t.submit({ observationId, model });
    await eventually(() => inference.calls.length === 1, 10_000);
    return { t, job };
  };

  it('lets a run that ends before the deadline finish and record its outcome', async () => {
    const { t, job } = await running('slow');
    const started = Date.now();
    await server.service.cvWorker.stop({ deadlineMs: 5000 });
    expect(Date.now() - started).to.be.below(3000);
    expect((await t.api(`/cv-jobs/${job.id}`)).body.status).to.equal('completed');
  });

  it('cuts a run still going at the deadline and leaves it running, for the sweep to run again', async () => {
    const { t, job } = await running('hanging');
    const started = Date.now();
    await server.service.cvWorker.stop({ deadlineMs: 500 });
    const ms = Date.now() - started;
    expect(ms).to.be.within(450, 2500);
    expect((await t.api(`/cv-jobs/${job.id}`)).body.status).to.equal('running');
  });
});
