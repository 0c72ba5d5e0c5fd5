import { Writable } from 'node:stream';
import { expect } from 'chai';
import { pino } from 'pino';
import { diskFullOn } from '../support/faults.js';
import { anObservationRecorded } from '../support/events.js';
import { freePort } from '../support/process.js';
import { startReceiver, type Receiver } from '../support/receiver.js';
import { request, startTestServer, withTenant, type TestServer } from '../support/server.js';
import { eventually } from '../support/wait.js';

/**
 * The log lines an operator alerts on (docs/operations.md#logs), read from the service's own pino output:
 * each failed webhook attempt is a `warn`, a subscription the service disables is an `error`, a consumer
 * restarted by its supervisor is a `warn`, with the documented fields.
 */

const secret = 'whsec-logs-0123456789abcdef';

type Line = Record<string, unknown> & { level: number; msg: string };

/** A pino destination that keeps every line, parsed. */
const capture = () => {
  const lines: Line[] = [];
  const stream = new Writable({
    write(chunk: Buffer, _encoding, done) {
      for (const text of chunk.toString('utf8').split('\n').filter(Boolean))
        lines.push(JSON.parse(text) as Line);
      done();
    },
  });
  return { lines, logger: pino({ level: 'info' }, stream) };
};

const warn = 40;
const error = 50;

describe('the log lines of webhook failures', function () {
  this.timeout(30_000);
  let server: TestServer;
  let receiver: Receiver;
  const { lines, logger } = capture();

  before(async () => {
    server = await startTestServer(
      {
        WEBHOOK_ALLOW_HTTP: 'true',
        WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true',
        // One retry after 100 ms: the second failure exhausts the schedule and disables the subscription.
        WEBHOOK_RETRY_SCHEDULE: '100ms',
        WEBHOOK_TIMEOUT: '500ms',
      },
      { logger },
    );
    receiver = await startReceiver(secret, () => 503);
  });
  after(async () => {
    await receiver.close();
    await server.close();
  });

  it('writes a warn per failed attempt and an error for the disabled subscription, with stable fields', async () => {
    const tenant = await withTenant(server, 'logsacme');
    const key = await tenant.key(['webhooks:manage', 'observations:read', 'observations:write']);
    const api = (path: string, init: Parameters<typeof request>[1] = {}) =>
      request(`${server.url}/v1/tenants/${tenant.tenantId}${path}`, {
        ...init,
        headers: { 'X-API-Key': key, ...init.headers },
      });
    const webhook = await api('/webhooks', {
      method: 'POST',
      body: { url: receiver.url, events: ['observation.created'], secret },
    });
    expect(webhook.status).to.equal(201);
    const subscriptionId = webhook.body.id as string;
    expect(
      (await api('/observations', { method: 'POST', body: { observedAt: '2026-05-01T09:30:00Z' } })).status,
    ).to.equal(201);

    const disabled = await eventually(() =>
      Promise.resolve(lines.find((line) => line.msg === 'webhook subscription disabled')),
    );
    const failed = lines.filter((line) => line.msg === 'webhook attempt failed');
    expect(failed).to.have.length(2);
    const [first, second] = failed as [Line, Line];
    for (const [line, attempt] of [
      [first, 1],
      [second, 2],
    ] as const) {
      expect(line.level).to.equal(warn);
      expect(line).to.include({
        subscriptionId,
        eventType: 'observation.created',
        attempt,
        status: 503,
        error: 'HTTP 503',
      });
      expect(line.deliveryId).to.match(/^d_[0-9a-f]{26}$/);
    }
    expect(first.deliveryId).to.equal(second.deliveryId);
    // The first failure says when the retry comes; the last has none left.
    expect(Date.parse(first.nextAttemptAt as string)).to.be.a('number').and.not.NaN;
    expect(second.nextAttemptAt).to.equal(null);

    expect(disabled.level).to.equal(error);
    expect(disabled).to.include({ subscriptionId, deliveryId: first.deliveryId, cause: 'retries_exhausted' });
    expect(disabled.reason).to.be.a('string').and.include('failed 2 times');
    expect(lines.indexOf(disabled)).to.be.above(lines.indexOf(second));
  });
});

describe('the log line and metrics of a consumer restart', function () {
  this.timeout(30_000);

  it('writes a warn per restart with the consumer, its restarts, the error and the back-off, and counts it', async () => {
    const { lines, logger } = capture();
    // Only the webhook projector's own writes (scheduling deliveries) fail, as SQLite fails on a full disk.
    const { fault, wrap } = diskFullOn('delivery-');
    const server = await startTestServer(
      { WEBHOOK_ALLOW_HTTP: 'true', WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true' },
      { logger, options: { wrapEventStore: wrap } },
    );
    const receiver = await startReceiver(secret);
    try {
      const tenant = await withTenant(server, 'restarts');
      const key = await tenant.key(['webhooks:manage', 'observations:read', 'observations:write']);
      const api = (path: string, body: unknown) =>
        request(`${server.url}/v1/tenants/${tenant.tenantId}${path}`, {
          method: 'POST',
          body,
          headers: { 'X-API-Key': key },
        });
      expect(
        (await api('/webhooks', { url: receiver.url, events: ['observation.created'], secret })).status,
      ).to.equal(201);
      fault.full = true;
      expect((await api('/observations', { observedAt: '2026-05-01T09:30:00Z' })).status).to.equal(201);
      const restart = await eventually(() =>
        Promise.resolve(
          lines.find(
            (line) => line.msg === 'consumer failed; restarting' && line.consumer === 'webhook-projector',
          ),
        ),
      );
      expect(restart.level).to.equal(warn);
      expect(restart).to.include({ consumer: 'webhook-projector', restarts: 1 });
      expect(restart.error).to.match(/disk is full/);
      expect(restart.retryInMs).to.be.a('number').and.above(0);

      // Held back by the full disk: the group's lag shows the observation it has not handled.
      const scrape = async () =>
        await (
          await fetch(`${server.url}/metrics`, { headers: { 'X-API-Key': server.platformAdminKey } })
        ).text();
      const behind = await scrape();
      expect(behind).to.match(/^obs_consumer_lag_events\{consumer="webhook-projector"\} [1-9]\d*$/m);
      expect(behind).to.match(/^obs_consumer_lag_seconds\{consumer="webhook-projector"\} \d/m);
      // Space comes back: the restart the back-off has scheduled succeeds, and the projector catches up.
      fault.full = false;
      await receiver.waitFor(1, 20_000);
      const after = await eventually(async () => {
        const text = await scrape();
        return /^obs_consumer_lag_events\{consumer="webhook-projector"\} 0$/m.test(text) ? text : undefined;
      });
      expect(after).to.match(/^obs_consumer_restarts_total\{consumer="webhook-projector"\} [1-9]\d*$/m);
      expect(after).to.match(/^obs_consumer_lag_seconds\{consumer="webhook-projector"\} 0$/m);
    } finally {
      await receiver.close();
      await server.close();
    }
  });
});

describe('the log line and metrics of a consumer group retrying an event', function () {
  this.timeout(30_000);

  it('writes a warn when the disable e-mail is not sent, and counts the retry of the notifier', async () => {
    const { lines, logger } = capture();
    // A mail server that refuses every connection: nothing listens on the port.
    const server = await startTestServer(
      {
        WEBHOOK_ALLOW_HTTP: 'true',
        WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true',
        WEBHOOK_RETRY_SCHEDULE: '100ms',
        WEBHOOK_TIMEOUT: '500ms',
        SMTP_URL: `smtp://127.0.0.1:${await freePort()}`,
      },
      { logger },
    );
    const receiver = await startReceiver(secret, () => 500);
    try {
      const tenant = await withTenant(server, 'mailless');
      const key = await tenant.key(['webhooks:manage', 'observations:read', 'observations:write']);
      const api = (path: string, body: unknown) =>
        request(`${server.url}/v1/tenants/${tenant.tenantId}${path}`, {
          method: 'POST',
          body,
          headers: { 'X-API-Key': key },
        });
      const webhook = await api('/webhooks', { url: receiver.url, events: ['observation.created'], secret });
      expect(webhook.status).to.equal(201);
      expect((await api('/observations', { observedAt: '2026-05-01T09:30:00Z' })).status).to.equal(201);
      const unsent = await eventually(() =>
        Promise.resolve(lines.find((line) => line.msg === 'webhook disable e-mail not sent; will retry')),
      );
      expect(unsent.level).to.equal(warn);
      expect(unsent).to.include({ subscriptionId: webhook.body.id as string, retryCount: 0 });
      const retries = await eventually(async () => {
        const text = await (
          await fetch(`${server.url}/metrics`, { headers: { 'X-API-Key': server.platformAdminKey } })
        ).text();
        const count = Number(
          /^obs_consumer_retries_total\{consumer="webhook-disable-notifier"\} (\d+)$/m.exec(text)?.[1] ?? 0,
        );
        return count > 0 ? count : undefined;
      });
      expect(retries).to.be.at.least(1);
    } finally {
      await receiver.close();
      await server.close();
    }
  });
});

describe('the log line and metrics of a parked event', function () {
  this.timeout(30_000);

  it('writes a warn with the projection, the event and the error, and shows the parked event', async () => {
    const { lines, logger } = capture();
    const server = await startTestServer({}, { logger });
    try {
      const tenant = await withTenant(server, 'poisoned');
      // Attributes nested 1,000 levels deep: more than the read model's JSON accepts.
      let attributes: Record<string, unknown> = { leaf: true };
      for (let depth = 1; depth < 1000; depth += 1) attributes = { nested: attributes };
      const { stream, event } = anObservationRecorded(tenant.tenantId, { attributes });
      const { lastPosition } = await server.stores.eventStore.appendToStream(stream, [event], 'no_stream');
      const parked = await eventually(() =>
        Promise.resolve(
          lines.find(
            (line) =>
              line.msg === 'projection cannot apply this event; parked it and going on' &&
              line.projection === 'observations',
          ),
        ),
      );
      expect(parked.level).to.equal(warn);
      expect(parked).to.include({ projection: 'observations', eventId: event.id, position: lastPosition });
      expect(parked.error).to.be.a('string').and.not.equal('');
      // Parked, the projection goes on: nothing of it waits. The count of parked events moves when the event
      // is parked, the lag once the checkpoint past it is committed, a moment later.
      const text = await eventually(async () => {
        const scraped = await (
          await fetch(`${server.url}/metrics`, { headers: { 'X-API-Key': server.platformAdminKey } })
        ).text();
        return /^obs_consumer_parked_events\{consumer="observations"\} 1$/m.test(scraped) &&
          /^obs_consumer_lag_events\{consumer="observations"\} 0$/m.test(scraped)
          ? scraped
          : undefined;
      });
      expect(text).to.match(/^obs_consumer_lag_events\{consumer="observations"\} 0$/m);
    } finally {
      await server.close();
    }
  });
});
