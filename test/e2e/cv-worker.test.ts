import { expect } from 'chai';
import { join } from 'node:path';
import { streamName } from '../../src/core/streams.js';
import { openSqliteEventStore } from '../../src/eventstore/sqlite.js';
import { tempDir } from '../support/adapters.js';
import { cvTenant } from '../support/cv.js';
import { eventually } from '../support/events.js';
import { testImage } from '../support/images.js';
import { inferReply, startInferenceServer } from '../support/inference-server.js';
import { freePort, startTs, stop } from '../support/process.js';
import { request } from '../support/server.js';

const platformKey = 'e2e-cv-platform-key-0123456789';
const slowMs = 2500;

describe('the CV worker killed mid-run', function () {
  this.timeout(120_000);

  it('loses no job and completes none twice: every job ends completed exactly once', async () => {
    const inference = await startInferenceServer(({ model }) => ({
      delayMs: slowMs,
      body: inferReply(
        [{ label: 'stone', confidence: 0.7, bbox: { x: 0.1, y: 0.1, width: 0.2, height: 0.2 } }],
        {
          model,
        },
      ),
    }));
    const { dir, remove } = tempDir();
    /** The service as `npm start` runs it: two jobs at once, a 4 s time-out, so a dead run is stale after 14 s. */
    const start = async () => {
      const port = await freePort();
      const service = startTs('src/main.ts', [], {
        DATA_DIR: dir,
        PORT: String(port),
        HOST: '127.0.0.1',
        LOG_LEVEL: 'warn',
        PLATFORM_ADMIN_KEY: platformKey,
        CV_JOB_TIMEOUT: '4s',
        CV_CONCURRENCY: '2',
        CV_REMOTE_MODELS: JSON.stringify([{ name: 'slow', url: inference.url, timeout: '10s' }]),
        // Started again on another port after a kill -9: its address stays the one clients use.
        PUBLIC_URL: 'http://127.0.0.1:3000',
      });
      const url = `http://127.0.0.1:${port}`;
      await eventually(async () => (await fetch(`${url}/health`).catch(() => null))?.ok === true, 30_000);
      return { ...service, url };
    };
    try {
      const first = await start();
      const tenant = await request(`${first.url}/v1/tenants`, {
        method: 'POST',
        body: { name: 'e2ecv', notificationEmail: 'ops@e2ecv.test' },
        headers: { 'X-API-Key': platformKey },
      });
      expect(tenant.status).to.equal(201);
      const tenantId = tenant.body.id as string;
      const adminKey = tenant.body.adminApiKey as string;
      let t = cvTenant(first.url, null, tenantId, adminKey);
      const observationId = await t.observe('kill me');
      await t.upload(
        observationId,
        await testImage({ width: 320, height: 240, format: 'png', background: 180 }),
      );
      const jobs: string[] = [];
      for (let i = 0; i < 6; i += 1) jobs.push((await t.submit({ observationId, model: 'slow' })).id);

      // Two run (CV_CONCURRENCY=2), four wait for a slot. Kill the process while the first two are mid-run.
      await eventually(() => inference.calls.length >= 2, 20_000);
      const killedAt = Date.now();
      await stop(first.child, first.exited, 'SIGKILL');
      const runningWhenKilled = inference.calls.length;
      expect(runningWhenKilled).to.equal(2);

      const second = await start();
      t = cvTenant(second.url, null, tenantId, adminKey);
      const finished = [];
      for (const id of jobs) finished.push(await t.finished(id, 60_000, 500));
      const tookMs = Date.now() - killedAt;
      await stop(second.child, second.exited);

      for (const job of finished) expect(job.status, JSON.stringify(job.error)).to.equal('completed');
      // The two runs the kill interrupted were started again once stale; the four waiting ones once.
      expect(finished.map((job) => job.attempts as number).sort()).to.deep.equal([1, 1, 1, 1, 2, 2]);
      expect(inference.calls.length).to.equal(8);

      const store = openSqliteEventStore(join(dir, 'events.db'));
      try {
        for (const jobId of jobs) {
          const events = await store.readStream(streamName('cvjob', tenantId, jobId));
          const types = events.map((event) => event.type);
          expect(
            types.filter((type) => type === 'CvJobCompleted'),
            `${jobId}: ${types.join(', ')}`,
          ).to.have.length(1);
          expect(
            types.filter((type) => type === 'CvJobFailed'),
            jobId,
          ).to.have.length(0);
          expect(types.at(-1)).to.equal('CvJobCompleted');
          const starts = events.filter((event) => event.type === 'CvJobStarted');
          // A re-run is a new attempt, by another instance.
          if (starts.length === 2) {
            expect((starts[0]!.data as { startedBy: string }).startedBy).not.to.equal(
              (starts[1]!.data as { startedBy: string }).startedBy,
            );
          }
        }
      } finally {
        await store.close();
      }
      console.log(
        `      all 6 jobs completed exactly once, ${Math.round(tookMs / 100) / 10} s after the kill`,
      );
    } finally {
      await inference.close();
      remove();
    }
  });
});
