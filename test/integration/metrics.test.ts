import { expect } from 'chai';
import { observationsProjection } from '../../projections/observations.js';
import { cvTenant } from '../support/cv.js';
import { anObservationRecorded } from '../support/events.js';
import { testImage } from '../support/images.js';
import { freePort } from '../support/process.js';
import { startReceiver, type Receiver } from '../support/receiver.js';
import { request, startTestServer, withTenant, type TestServer } from '../support/server.js';
import { eventually } from '../support/wait.js';

/**
 * GET /metrics on the running service (docs/operations.md#metrics): who may read it in each METRICS mode,
 * the lag of every consumer, and counters that move with real work over HTTP.
 */

const secret = 'whsec-metrics-0123456789abcdef';
const webhookEnv = {
  WEBHOOK_ALLOW_HTTP: 'true',
  WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true',
  WEBHOOK_RETRY_SCHEDULE: '100ms',
  WEBHOOK_TIMEOUT: '500ms',
};

/** `name{a="b",...} value` lines, parsed: the value of the sample with exactly these labels. */
const sampleOf = (text: string, name: string, labels: Record<string, string> = {}): number | undefined => {
  const wanted = Object.entries(labels)
    .map(([key, value]) => `${key}="${value}"`)
    .sort()
    .join(',');
  for (const line of text.split('\n')) {
    const match = /^([a-zA-Z_:][\w:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!match || match[1] !== name) continue;
    const given = (match[2] ?? '')
      .split(/,(?=\w+=")/)
      .filter((pair) => pair !== '')
      .sort()
      .join(',');
    if (given === wanted) return Number(match[3]);
  }
  return undefined;
};

const scrapeWith = async (url: string, key: string | null) => {
  const response = await fetch(`${url}/metrics`, { headers: key ? { 'X-API-Key': key } : {} });
  return { status: response.status, type: response.headers.get('content-type'), text: await response.text() };
};

describe('metrics', function () {
  this.timeout(60_000);

  describe('with METRICS=platform (the default)', () => {
    let server: TestServer;
    let receiver: Receiver;
    let tenant: Awaited<ReturnType<typeof withTenant>>;
    const scrape = async () => {
      const { status, text } = await scrapeWith(server.url, server.platformAdminKey);
      expect(status).to.equal(200);
      return text;
    };

    before(async () => {
      server = await startTestServer(webhookEnv);
      tenant = await withTenant(server, 'metricsacme');
      // Answers 204, except to deliveries whose path says fail.
      receiver = await startReceiver(secret, (_n, received) => (received.path.endsWith('/fail') ? 500 : 204));
    });
    after(async () => {
      await receiver.close();
      await server.close();
    });

    it('serves the Prometheus text format to the platform key, process defaults included', async () => {
      const response = await scrapeWith(server.url, server.platformAdminKey);
      expect(response.status).to.equal(200);
      expect(response.type).to.match(/^text\/plain; version=0\.0\.4/);
      expect(response.text).to.match(/^process_cpu_user_seconds_total \d/m);
      expect(response.text).to.match(/^nodejs_heap_size_used_bytes \d/m);
      expect(response.text).to.include('# TYPE obs_http_request_duration_seconds histogram');
    });

    it('refuses a request without a credential or with a wrong one (401), and a tenant key (403), as problems', async () => {
      for (const [key, status] of [
        [null, 401],
        ['not-the-platform-key', 401],
        [tenant.adminKey, 403],
      ] as const) {
        const response = await request(`${server.url}/metrics`, key ? { headers: { 'X-API-Key': key } } : {});
        expect(response.status, String(key)).to.equal(status);
        expect(response.headers.get('content-type')).to.match(/^application\/problem\+json/);
        expect(response.body.status).to.equal(status);
        expect(JSON.stringify(response.body)).not.to.include('obs_');
      }
    });

    it('shows position, lag in events and seconds, parked events, retries, state and restarts of every consumer', async () => {
      const text = await scrape();
      const names = server.service.consumers().map((consumer) => consumer.name);
      expect(names).to.include.members([
        'revocations',
        'observations',
        'webhook-projector',
        'webhook-disable-notifier',
        'cv-worker',
      ]);
      for (const consumer of names) {
        for (const metric of [
          'obs_consumer_position',
          'obs_consumer_lag_events',
          'obs_consumer_lag_seconds',
          'obs_consumer_parked_events',
          'obs_consumer_retries_total',
          'obs_consumer_restarts_total',
        ]) {
          expect(sampleOf(text, metric, { consumer }), `${metric} of ${consumer}`).to.be.a('number');
        }
        expect(sampleOf(text, 'obs_consumer_state', { consumer, state: 'running' }), consumer).to.equal(1);
        expect(sampleOf(text, 'obs_consumer_state', { consumer, state: 'retrying' }), consumer).to.equal(0);
      }
    });

    it('shows the lag of a projection held back rise, and fall back to 0 once it runs again', async () => {
      const runner = server.service.projections.of(observationsProjection).runner;
      await eventually(async () =>
        sampleOf(await scrape(), 'obs_consumer_lag_events', { consumer: 'observations' }) === 0
          ? true
          : undefined,
      );
      await runner.stop();
      try {
        for (let n = 0; n < 3; n += 1) {
          const { stream, event } = anObservationRecorded(tenant.tenantId, { notes: `held back ${n}` });
          await server.stores.eventStore.appendToStream(stream, [event], 'no_stream');
        }
        const head = await server.stores.eventStore.headPosition();
        const behind = await eventually(async () => {
          const text = await scrape();
          const lag = sampleOf(text, 'obs_consumer_lag_events', { consumer: 'observations' }) ?? 0;
          return lag >= 3 ? text : undefined;
        });
        const position = sampleOf(behind, 'obs_consumer_position', { consumer: 'observations' })!;
        expect(sampleOf(behind, 'obs_consumer_lag_events', { consumer: 'observations' })).to.equal(
          head - position,
        );
        expect(sampleOf(behind, 'obs_consumer_lag_seconds', { consumer: 'observations' })).to.be.at.least(0);
        expect(
          sampleOf(behind, 'obs_consumer_state', { consumer: 'observations', state: 'stopped' }),
        ).to.equal(1);
      } finally {
        await runner.start();
      }
      const caughtUp = await eventually(async () => {
        const text = await scrape();
        return sampleOf(text, 'obs_consumer_lag_events', { consumer: 'observations' }) === 0
          ? text
          : undefined;
      });
      expect(sampleOf(caughtUp, 'obs_consumer_lag_seconds', { consumer: 'observations' })).to.equal(0);
      expect(sampleOf(caughtUp, 'obs_consumer_position', { consumer: 'observations' })).to.be.at.least(
        await server.stores.eventStore.headPosition().then((head) => head - 50),
      );
    });

    it('counts webhook attempts by outcome, the latency to a 2xx, and a subscription the service disabled', async () => {
      const key = await tenant.key(['webhooks:manage', 'observations:read', 'observations:write']);
      const api = (path: string, init: Parameters<typeof request>[1] = {}) =>
        request(`${server.url}/v1/tenants/${tenant.tenantId}${path}`, {
          ...init,
          headers: { 'X-API-Key': key, ...init.headers },
        });
      const before = await scrape();
      for (const path of ['/ok', '/fail']) {
        const created = await api('/webhooks', {
          method: 'POST',
          body: { url: `${receiver.url}${path}`, events: ['observation.created'], secret },
        });
        expect(created.status, JSON.stringify(created.body)).to.equal(201);
      }
      const observed = await api('/observations', {
        method: 'POST',
        body: { observedAt: '2026-05-01T09:30:00Z', notes: 'a metered fox' },
      });
      expect(observed.status).to.equal(201);
      const count = (text: string, name: string, labels: Record<string, string> = {}) =>
        sampleOf(text, name, labels) ?? 0;
      const after = await eventually(async () => {
        const text = await scrape();
        return count(text, 'obs_webhook_subscriptions_disabled_total', { reason: 'retries_exhausted' }) >
          count(before, 'obs_webhook_subscriptions_disabled_total', { reason: 'retries_exhausted' })
          ? text
          : undefined;
      });
      // The /fail subscription: one failure with a retry left, then one that exhausts the schedule.
      for (const outcome of ['succeeded', 'retrying', 'exhausted']) {
        expect(
          count(after, 'obs_webhook_attempts_total', { outcome }) -
            count(before, 'obs_webhook_attempts_total', { outcome }),
          outcome,
        ).to.equal(1);
      }
      expect(
        count(after, 'obs_webhook_delivery_latency_seconds_count') -
          count(before, 'obs_webhook_delivery_latency_seconds_count'),
      ).to.equal(1);
      expect(count(after, 'obs_webhook_delivery_latency_seconds_sum')).to.be.above(0);
      // The disable e-mail goes to DATA_DIR/outbox (no SMTP_URL).
      await eventually(async () =>
        count(await scrape(), 'obs_mail_outbox_messages') >= 1 ? true : undefined,
      );
    });

    it('counts CV runs by model and outcome, their duration, and shows the queue', async () => {
      const key = await tenant.key(['cv:read', 'cv:write', 'observations:read', 'observations:write']);
      const cv = cvTenant(server.url, server.stores, tenant.tenantId, key);
      const observationId = await cv.observe('two dark stones');
      await cv.upload(
        observationId,
        await testImage({ width: 320, height: 240, format: 'png', background: 200 }),
      );
      const requested = await cv.api('/cv-jobs', {
        method: 'POST',
        body: { observationId, model: 'object-proposals' },
      });
      expect(requested.status, JSON.stringify(requested.body)).to.equal(202);
      await eventually(async () => {
        const job = await cv.api(`/cv-jobs/${requested.body.id as string}`);
        return job.body.status === 'completed' ? true : undefined;
      });
      const text = await eventually(async () => {
        const scraped = await scrape();
        return sampleOf(scraped, 'obs_cv_jobs_total', { model: 'object-proposals', outcome: 'completed' })
          ? scraped
          : undefined;
      });
      expect(
        sampleOf(text, 'obs_cv_jobs_total', { model: 'object-proposals', outcome: 'completed' }),
      ).to.equal(1);
      expect(sampleOf(text, 'obs_cv_job_duration_seconds_count', { model: 'object-proposals' })).to.equal(1);
      expect(sampleOf(text, 'obs_cv_jobs_pending', { status: 'queued' })).to.be.a('number');
      expect(sampleOf(text, 'obs_cv_jobs_pending', { status: 'running' })).to.be.a('number');
    });

    it('counts appends to the event store, their latency, and HTTP requests by route template', async () => {
      const before = await scrape();
      const key = await tenant.key(['observations:write']);
      const created = await request(`${server.url}/v1/tenants/${tenant.tenantId}/observations`, {
        method: 'POST',
        body: { observedAt: '2026-05-01T09:30:00Z', notes: 'one more' },
        headers: { 'X-API-Key': key },
      });
      expect(created.status).to.equal(201);
      await request(`${server.url}/no/such/route`);
      const after = await scrape();
      const appends = (text: string) => sampleOf(text, 'obs_eventstore_appends_total', { result: 'ok' }) ?? 0;
      expect(appends(after)).to.be.above(appends(before));
      expect(sampleOf(after, 'obs_eventstore_appended_events_total')).to.be.at.least(appends(after));
      expect(sampleOf(after, 'obs_eventstore_append_duration_seconds_count')).to.be.at.least(appends(after));
      expect(
        sampleOf(after, 'obs_http_request_duration_seconds_count', {
          route: '/v1/tenants/:tenantId/observations',
          method: 'POST',
          status_class: '2xx',
        }),
      ).to.be.at.least(1);
      expect(
        sampleOf(after, 'obs_http_request_duration_seconds_count', {
          route: 'unmatched',
          method: 'GET',
          status_class: '4xx',
        }),
      ).to.be.at.least(1);
    });

    it('names no tenant anywhere in its output', async () => {
      const text = await scrape();
      expect(text).not.to.include(tenant.tenantId);
      // No tenant-shaped id either (`t_` and its base-36 id), in a label or anywhere else.
      expect(text).not.to.match(/(?<!\w)t_[0-9a-z]{8,}/);
      expect(text).not.to.include('metricsacme');
    });
  });

  describe('with METRICS=port', () => {
    let server: TestServer;
    let port: number;
    before(async () => {
      server = await startTestServer({
        METRICS: 'port',
        METRICS_PORT: String(await freePort()),
        HOST: '127.0.0.1',
      });
      port = server.service.metricsPort!;
    });
    after(async () => server.close());

    it('serves /metrics on its own port without a credential', async () => {
      const response = await scrapeWith(`http://127.0.0.1:${port}`, null);
      expect(response.status).to.equal(200);
      expect(response.type).to.match(/^text\/plain; version=0\.0\.4/);
      expect(sampleOf(response.text, 'obs_consumer_lag_events', { consumer: 'observations' })).to.be.a(
        'number',
      );
    });

    it('answers 404 on the API port, even to the platform key, and 404 for other paths on its own port', async () => {
      const onApi = await request(`${server.url}/metrics`, {
        headers: { 'X-API-Key': server.platformAdminKey },
      });
      expect(onApi.status).to.equal(404);
      expect(onApi.headers.get('content-type')).to.match(/^application\/problem\+json/);
      const other = await fetch(`http://127.0.0.1:${port}/v1/openapi.json`);
      expect(other.status).to.equal(404);
    });

    it('serves readiness with its checks and consumers on its own port, without a credential', async () => {
      for (const path of ['/health/ready', '/health']) {
        const response = await fetch(`http://127.0.0.1:${port}${path}`);
        expect(response.status, path).to.equal(200);
        const body = (await response.json()) as { status: string; checks: Record<string, unknown> };
        expect(body.status).to.equal('ready');
        expect(body.checks.eventStore).to.deep.equal({ status: 'pass' });
      }
    });
  });

  describe('with METRICS=off', () => {
    let server: TestServer;
    before(async () => {
      server = await startTestServer({ METRICS: 'off' });
    });
    after(async () => server.close());

    it('serves /metrics nowhere: 404 to the platform key', async () => {
      const response = await request(`${server.url}/metrics`, {
        headers: { 'X-API-Key': server.platformAdminKey },
      });
      expect(response.status).to.equal(404);
      expect(response.headers.get('content-type')).to.match(/^application\/problem\+json/);
      expect(server.service.metricsPort).to.equal(null);
    });
  });
});
