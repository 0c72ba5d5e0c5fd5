import { expect } from 'chai';
import { join } from 'node:path';
import { rotateKeys } from '../../src/auth/signing-keys.js';
import { streamName } from '../../src/core/streams.js';
import { openPostgresEventStore } from '../../src/eventstore/postgres.js';
import { tempDir } from '../support/adapters.js';
import { cvTenant } from '../support/cv.js';
import { eventually } from '../support/events.js';
import { testImage } from '../support/images.js';
import { inferReply, startInferenceServer } from '../support/inference-server.js';
import { startTs, stop } from '../support/process.js';
import { createTestDatabase, describePostgres } from '../support/postgres.js';
import { startReceiver } from '../support/receiver.js';
import { request } from '../support/server.js';
import { createTenant, startServiceProcess } from '../support/service-process.js';

const webhookSecret = 'whsec-scale-out-0123456789abcdef';

/**
 * Scale-out on PostgreSQL: two `ROLE=api` and two `ROLE=worker` processes as `npm start` runs them, on one
 * database of their own, each with a DATA_DIR of its own (nothing shared but the database and the
 * secrets). Observations through both APIs, a webhook to a local receiver, CV jobs; one worker killed with
 * SIGKILL mid-run and started again.
 */
describePostgres('PostgreSQL: two API and two worker processes on one database', () => {
  it('keeps every write, delivers every webhook event at least once, and completes every CV job once', async function () {
    this.timeout(240_000);
    const databaseUrl = createTestDatabase();
    const inference = await startInferenceServer(({ model }) => ({
      delayMs: 300,
      body: inferReply(
        [{ label: 'fox', confidence: 0.9, bbox: { x: 0.1, y: 0.1, width: 0.2, height: 0.2 } }],
        {
          model,
        },
      ),
    }));
    const receiver = await startReceiver(webhookSecret);
    const keys = tempDir();
    const keyring = join(keys.dir, 'signing-keys.json');
    rotateKeys(keyring);
    const dirs: { dir: string; remove: () => void }[] = [];
    const running: { child: import('node:child_process').ChildProcess; exited: Promise<number | null> }[] =
      [];
    const start = async (role: 'api' | 'worker') => {
      const dir = tempDir();
      dirs.push(dir);
      const service = await startServiceProcess(dir.dir, {
        ROLE: role,
        LOG_LEVEL: 'warn',
        DATABASE_URL: databaseUrl,
        CURSOR_SECRET: 'scale-out-cursor-secret-0123456789abcdef',
        WEBHOOK_SECRET_KEY: 'scale-out-webhook-key-0123456789abcdef',
        IDEMPOTENCY_SECRET_KEY: 'scale-out-idempotency-key-0123456789ab',
        // One keyring for all, as the secrets: a process with its own would refuse to start.
        SIGNING_KEYS_FILE: keyring,
        RATE_LIMIT: 'off',
        WEBHOOK_ALLOW_HTTP: 'true',
        WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true',
        CV_JOB_TIMEOUT: '4s',
        CV_REMOTE_MODELS: JSON.stringify([{ name: 'remote', url: inference.url, timeout: '10s' }]),
        // The address a load balancer in front of both APIs would have: one issuer for every token.
        PUBLIC_URL: 'http://127.0.0.1:3000',
      });
      running.push(service);
      return service;
    };
    try {
      const apis = [await start('api'), await start('api')];
      const firstWorker = await start('worker');
      await start('worker');
      const { tenantId, headers } = await createTenant(apis[0]!.url, 'scaleout');
      const adminKey = headers['X-API-Key'];
      const webhook = await request(`${apis[0]!.url}/v1/tenants/${tenantId}/webhooks`, {
        method: 'POST',
        headers,
        body: { url: receiver.url, events: ['observation.created'], secret: webhookSecret },
      });
      expect(webhook.status, JSON.stringify(webhook.body)).to.equal(201);

      const tenants = apis.map((api) => cvTenant(api.url, null, tenantId, adminKey));
      const imaged = await tenants[0]!.observe('with an image');
      await tenants[0]!.upload(
        imaged,
        await testImage({ width: 320, height: 240, format: 'png', background: 90 }),
      );
      const observations = [imaged];
      const jobs: string[] = [];
      for (let n = 0; n < 40; n += 1) {
        const tenant = tenants[n % 2]!;
        observations.push(await tenant.observe(`observation ${n}`));
        if (n % 5 === 0) jobs.push((await tenant.submit({ observationId: imaged, model: 'remote' })).id);
        // Mid-run: one worker dies without a word, and comes back a little later.
        if (n === 15) await stop(firstWorker.child, firstWorker.exited, 'SIGKILL');
        if (n === 30) await start('worker');
      }

      // Every acknowledged write is in both APIs' lists.
      for (const tenant of tenants) {
        await eventually(async () => {
          const list = await tenant.api('/observations?limit=100');
          const ids = new Set((list.body.data as { id: string }[]).map((observation) => observation.id));
          return observations.every((id) => ids.has(id));
        }, 60_000);
      }
      // Every observation.created reaches the receiver at least once.
      const delivered = () =>
        receiver.received.filter(
          (received) => received.verified && received.body?.type === 'observation.created',
        );
      await eventually(() => {
        const seen = new Set(delivered().map((received) => received.body.data.observationId as string));
        return observations.every((id) => seen.has(id));
      }, 90_000);
      // Every CV job completes, exactly once.
      for (const job of jobs) {
        const finished = await tenants[1]!.finished(job, 90_000, 250);
        expect(finished.status, JSON.stringify(finished.error)).to.equal('completed');
      }
      const store = await openPostgresEventStore(databaseUrl);
      const startedBy = new Set<string>();
      try {
        for (const job of jobs) {
          const events = await store.readStream(streamName('cvjob', tenantId, job));
          const types = events.map((event) => event.type);
          expect(
            types.filter((type) => type === 'CvJobCompleted'),
            `${job}: ${types.join(', ')}`,
          ).to.have.length(1);
          for (const event of events) {
            if (event.type === 'CvJobStarted') startedBy.add((event.data as { startedBy: string }).startedBy);
          }
        }
      } finally {
        await store.close();
      }
      // The tenant's history verifies, as the operator checks it.
      const audit = startTs('src/cli/main.ts', ['audit', 'verify', '--tenant', tenantId, '--json'], {
        DATA_DIR: dirs[0]!.dir,
        DATABASE_URL: databaseUrl,
      });
      expect(await audit.exited, audit.output.stderr).to.equal(0);
      expect(JSON.parse(audit.output.stdout)).to.deep.include({ tenantId, broken: null });
      // The read models equal a rebuild from the events: the lists before and after one, the workers stopped.
      const lists = async () =>
        Promise.all(
          ['/observations?limit=100', '/cv-jobs?limit=100'].map(
            async (path) => (await tenants[0]!.api(path)).body.data as unknown,
          ),
        );
      for (const service of running.slice(2)) {
        if (service.child.exitCode === null) await stop(service.child, service.exited);
      }
      const live = await lists();
      const rebuild = startTs('src/cli/main.ts', ['projections', 'rebuild'], {
        DATA_DIR: dirs[0]!.dir,
        DATABASE_URL: databaseUrl,
      });
      expect(await rebuild.exited, rebuild.output.stderr + rebuild.output.stdout).to.equal(0);
      expect(await lists()).to.deep.equal(live);
      const ids = delivered().map((received) => received.body.id as string);
      console.log(
        `      ${observations.length} observations in both lists; ${ids.length} deliveries of ${new Set(ids).size} events (${ids.length - new Set(ids).size} duplicates); ${jobs.length} CV jobs completed once each, started by ${startedBy.size} workers`,
      );
    } finally {
      for (const service of running)
        if (service.child.exitCode === null) await stop(service.child, service.exited);
      for (const dir of dirs) dir.remove();
      keys.remove();
      await receiver.close();
      await inference.close();
    }
  });
});
