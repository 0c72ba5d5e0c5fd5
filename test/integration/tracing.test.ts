import { randomBytes } from 'node:crypto';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { SpanKind } from '@opentelemetry/api';
import { InMemorySpanExporter, SimpleSpanProcessor, type ReadableSpan } from '@opentelemetry/sdk-trace-base';
import { NodeTracerProvider } from '@opentelemetry/sdk-trace-node';
import { expect } from 'chai';
import type { RecordedEvent } from '../../src/core/events.js';
import { streamName } from '../../src/core/streams.js';
import { verifyTenant } from '../../src/audit/verify.js';
import { eventHash, genesisHash } from '../../src/eventstore/hash-chain.js';
import { tracingOn, useTracerProvider, type Tracing } from '../../src/observability/tracing.js';
import { deliveryIdFor } from '../../src/webhooks/delivery.decider.js';
import { cvTenant } from '../support/cv.js';
import { testImage } from '../support/images.js';
import { openApiValidator } from '../support/openapi.js';
import { startReceiver, type Receiver } from '../support/receiver.js';
import { request, startTestServer, withTenant, type TestServer } from '../support/server.js';
import { eventually } from '../support/wait.js';

const secret = 'whsec-trace-0123456789abcdef';
const env = { WEBHOOK_ALLOW_HTTP: 'true', WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true' };
const scopes = ['cv:read', 'cv:write', 'observations:read', 'observations:write', 'webhooks:manage'];

/** A caller's trace: a fresh trace id and the caller's own span id, as a traced client would send them. */
const callerTrace = () => {
  const traceId = randomBytes(16).toString('hex');
  const spanId = randomBytes(8).toString('hex');
  return { traceId, spanId, traceparent: `00-${traceId}-${spanId}-01` };
};

/** The span id a W3C traceparent names. */
const spanIdOf = (traceparent: string | undefined) => traceparent?.split('-')[2];

const firstEvent = async (server: TestServer, stream: string, type: string): Promise<RecordedEvent> => {
  const event = (await server.stores.eventStore.readStream(stream)).find((e) => e.type === type);
  if (!event) throw new Error(`no ${type} in ${stream}`);
  return event;
};

/** A tenant that subscribes a live receiver to observation.created, and can write observations and CV jobs. */
const setUp = async (server: TestServer) => {
  const tenant = await withTenant(server, `trace${randomBytes(3).toString('hex')}`);
  const key = await tenant.key(scopes);
  const t = cvTenant(server.url, server.stores, tenant.tenantId, key);
  const receiver = await startReceiver(secret);
  const hook = await t.api('/webhooks', {
    method: 'POST',
    body: { url: receiver.url, events: ['observation.created'], secret },
  });
  expect(hook.status, JSON.stringify(hook.body)).to.equal(201);
  /** Records an observation with these request headers; answers its id and its ObservationRecorded. */
  const observe = async (headers: Record<string, string>) => {
    const response = await t.api('/observations', {
      method: 'POST',
      body: { observedAt: '2026-05-01T09:30:00Z', notes: 'a traced fox' },
      headers,
    });
    expect(response.status, JSON.stringify(response.body)).to.equal(201);
    const id = response.body.id as string;
    const event = await firstEvent(
      server,
      streamName('observation', tenant.tenantId, id),
      'ObservationRecorded',
    );
    return { id, event };
  };
  return { ...tenant, t, receiver, webhookId: hook.body.id as string, observe };
};

describe('traces', () => {
  describe('with the SDK registered (spans kept in memory)', () => {
    const exporter = new InMemorySpanExporter();
    let tracing: Tracing;
    let server: TestServer;
    let tenant: Awaited<ReturnType<typeof setUp>>;

    before(async () => {
      tracing = useTracerProvider(
        new NodeTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] }),
      );
      server = await startTestServer(env);
      tenant = await setUp(server);
    });
    after(async () => {
      await tenant?.receiver.close();
      await server?.close();
      await tracing.shutdown();
    });

    const spansOf = (traceId: string) =>
      exporter.getFinishedSpans().filter((span) => span.spanContext().traceId === traceId);
    /** The one finished span of the trace that matches, once it has ended. */
    const span = (traceId: string, what: string, match: (span: ReadableSpan) => boolean) =>
      eventually(() => Promise.resolve(spansOf(traceId).find(match)), 10_000, what);
    const parentOf = (child: ReadableSpan) => child.parentSpanContext?.spanId;

    it('follows a request from HTTP through the command, the projections and the webhook to the receiver', async () => {
      const caller = callerTrace();
      const { id, event } = await tenant.observe({
        traceparent: caller.traceparent,
        'X-Correlation-Id': 'caller-correlation-0001',
      });

      // The trace id wins over X-Correlation-Id, and the event names the span that wrote it.
      expect(event.metadata.correlationId).to.equal(caller.traceId);
      expect(event.metadata.traceparent).to.match(new RegExp(`^00-${caller.traceId}-[0-9a-f]{16}-01$`));

      const server_ = await span(caller.traceId, 'the server span', (s) => s.kind === SpanKind.SERVER);
      expect(server_.name).to.equal('POST /v1/tenants/:tenantId/observations');
      expect(parentOf(server_)).to.equal(caller.spanId);
      expect(server_.attributes['http.response.status_code']).to.equal(201);
      expect(server_.attributes['http.route']).to.equal('/v1/tenants/:tenantId/observations');

      const command = await span(
        caller.traceId,
        'the command span',
        (s) => s.name === 'command RecordObservation',
      );
      expect(parentOf(command)).to.equal(server_.spanContext().spanId);
      expect(spanIdOf(event.metadata.traceparent)).to.equal(command.spanContext().spanId);
      expect(command.attributes['event_store.position']).to.equal(event.position);

      // The read model: its span is in the event's trace, a child of the span that wrote the event.
      const projection = await span(
        caller.traceId,
        'the projection span',
        (s) => s.name === 'project observations',
      );
      expect(projection.kind).to.equal(SpanKind.CONSUMER);
      expect(parentOf(projection)).to.equal(command.spanContext().spanId);
      expect(projection.attributes['event.id']).to.equal(event.id);

      // The webhook: mapped by the projector, scheduled, attempted; the receiver gets the attempt's traceparent.
      const consumed = await span(
        caller.traceId,
        'the projector span',
        (s) => s.name === 'consume webhook-projector',
      );
      expect(parentOf(consumed)).to.equal(command.spanContext().spanId);
      const schedule = await span(caller.traceId, 'the schedule span', (s) => s.name === 'command Schedule');
      expect(parentOf(schedule)).to.equal(consumed.spanContext().spanId);
      const attempt = await span(caller.traceId, 'the attempt span', (s) => s.name === 'webhook attempt');
      expect(attempt.kind).to.equal(SpanKind.CLIENT);
      expect(parentOf(attempt)).to.equal(schedule.spanContext().spanId);
      expect(attempt.attributes['http.response.status_code']).to.equal(204);

      const received = await eventually(
        () => Promise.resolve(tenant.receiver.received.find((r) => r.body?.data?.observationId === id)),
        10_000,
        'the delivery of this observation',
      );
      expect(received.headers.traceparent).to.equal(
        `00-${caller.traceId}-${attempt.spanContext().spanId}-01`,
      );

      // What the attempt recorded carries the trace on, from the command the attempt ran.
      const deliveryStream = streamName(
        'delivery',
        tenant.tenantId,
        deliveryIdFor(tenant.webhookId, received.body.id as string),
      );
      const attempted = await eventually(
        async () =>
          (await server.stores.eventStore.readStream(deliveryStream)).find(
            (e) => e.type === 'DeliveryAttempted',
          ),
        10_000,
        'DeliveryAttempted',
      );
      const outcome = await span(
        caller.traceId,
        'the outcome span',
        (s) => s.name === 'command RecordOutcome',
      );
      expect(parentOf(outcome)).to.equal(attempt.spanContext().spanId);
      expect(attempted.metadata.traceparent).to.equal(
        `00-${caller.traceId}-${outcome.spanContext().spanId}-01`,
      );
    });

    it('follows a CV job from its request to the run and the completion it records', async () => {
      const observationId = (await tenant.observe({})).id;
      await tenant.t.upload(observationId, await testImage({ width: 320, height: 240, format: 'png' }));
      const caller = callerTrace();
      const job = await tenant.t.api('/cv-jobs', {
        method: 'POST',
        body: { observationId, model: 'image-quality' },
        headers: { traceparent: caller.traceparent },
      });
      expect(job.status, JSON.stringify(job.body)).to.equal(202);
      const jobId = job.body.id as string;
      expect((await tenant.t.finished(jobId)).status).to.equal('completed');

      const stream = streamName('cvjob', tenant.tenantId, jobId);
      const requested = await firstEvent(server, stream, 'CvJobRequested');
      expect(requested.metadata.correlationId).to.equal(caller.traceId);
      const run = await span(caller.traceId, 'the CV job span', (s) => s.name === 'cv job');
      expect(parentOf(run)).to.equal(spanIdOf(requested.metadata.traceparent));
      expect(run.attributes['cv.job_id']).to.equal(jobId);
      const completed = await firstEvent(server, stream, 'CvJobCompleted');
      expect(completed.metadata.traceparent).to.equal(`00-${caller.traceId}-${run.spanContext().spanId}-01`);
    });

    it('ignores an invalid traceparent: a new trace, and the correlation id the request names', async () => {
      const invalid = [
        `ff-${'a'.repeat(32)}-${'b'.repeat(16)}-01`,
        `00-${'0'.repeat(32)}-${'b'.repeat(16)}-01`,
        `00-${'A'.repeat(32)}-${'b'.repeat(16)}-01`,
        `00-${'a'.repeat(32)}-${'b'.repeat(16)}-01-extra`,
      ];
      for (const traceparent of invalid) {
        const { event } = await tenant.observe({
          traceparent,
          'X-Correlation-Id': 'caller-correlation-0002',
        });
        expect(event.metadata.correlationId, traceparent).to.equal('caller-correlation-0002');
        const traceId = event.metadata.traceparent?.split('-')[1];
        expect(traceId, traceparent).to.match(/^[0-9a-f]{32}$/);
        expect(traceparent).to.not.include(traceId!);
      }
    });

    it('correlates a request that starts its trace here by that trace id', async () => {
      const { event } = await tenant.observe({});
      const traceId = event.metadata.traceparent?.split('-')[1];
      expect(traceId).to.match(/^[0-9a-f]{32}$/);
      expect(event.metadata.correlationId).to.equal(traceId);
    });

    it('shows the traceparent in the event history, as the OpenAPI document describes it', async () => {
      const caller = callerTrace();
      await tenant.observe({ traceparent: caller.traceparent });
      const response = await request(
        `${server.url}/v1/tenants/${tenant.tenantId}/events?type=ObservationRecorded&limit=1000`,
        { headers: { 'X-API-Key': tenant.adminKey } },
      );
      expect(response.status).to.equal(200);
      const traced = (response.body.data as RecordedEvent[]).find(
        (event) => event.metadata.correlationId === caller.traceId,
      );
      expect(traced?.metadata.traceparent).to.match(new RegExp(`^00-${caller.traceId}-`));
      const document = (await (await fetch(`${server.url}/v1/openapi.json`)).json()) as Parameters<
        typeof openApiValidator
      >[0];
      const v = openApiValidator(document);
      expect(v.errorsOf(v.schema('HistoryEvent'), traced)).to.deep.equal([]);
    });

    it('chains the traceparent into the event hash, and the whole history of the tenant verifies', async () => {
      const caller = callerTrace();
      const { id } = await tenant.observe({ traceparent: caller.traceparent });
      const stream = streamName('observation', tenant.tenantId, id);
      const [stored] = await server.stores.eventStore.readStream(stream, { raw: true });
      expect(stored?.metadata.traceparent).to.match(new RegExp(`^00-${caller.traceId}-`));
      const { traceparent: _dropped, ...untraced } = stored!.metadata;
      expect(eventHash(genesisHash, stored!)).to.equal(stored!.hash);
      expect(eventHash(genesisHash, { ...stored!, metadata: untraced })).to.not.equal(stored!.hash);
      expect((await verifyTenant(server.stores.eventStore, tenant.tenantId)).broken).to.equal(null);
    });
  });

  describe('with OTEL_EXPORTER_OTLP_ENDPOINT set', () => {
    it('loads the SDK, exports the spans over OTLP/HTTP under OTEL_SERVICE_NAME, and flushes them on stop', async () => {
      const bodies: { path: string; body: string }[] = [];
      const collector = createServer((req, res) => {
        const chunks: Buffer[] = [];
        req.on('data', (chunk: Buffer) => chunks.push(chunk));
        req.on('end', () => {
          bodies.push({ path: req.url ?? '', body: Buffer.concat(chunks).toString('utf8') });
          res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
        });
      });
      await new Promise<void>((resolve) => collector.listen(0, '127.0.0.1', resolve));
      const { port } = collector.address() as AddressInfo;
      try {
        const server = await startTestServer({
          ...env,
          OTEL_EXPORTER_OTLP_ENDPOINT: `http://127.0.0.1:${port}/`,
          OTEL_SERVICE_NAME: 'obs-trace-test',
        });
        const caller = callerTrace();
        try {
          expect(tracingOn()).to.equal(true);
          const live = await request(`${server.url}/health/live`, {
            headers: { traceparent: caller.traceparent },
          });
          expect(live.status).to.equal(200);
        } finally {
          await server.close();
        }
        expect(tracingOn()).to.equal(false);
        const exported = bodies.filter((b) => b.path === '/v1/traces').map((b) => b.body);
        expect(exported.join('\n')).to.include(caller.traceId).and.include('obs-trace-test');
      } finally {
        await new Promise((resolve) => collector.close(resolve));
      }
    });
  });

  describe('without the SDK', () => {
    let server: TestServer;
    let tenant: Awaited<ReturnType<typeof setUp>>;
    let receiver: Receiver;

    before(async () => {
      server = await startTestServer(env);
      tenant = await setUp(server);
      receiver = tenant.receiver;
    });
    after(async () => {
      await receiver?.close();
      await server?.close();
    });

    it('still takes the correlation id from a traceparent, and invents no trace for the events or the webhook', async () => {
      expect(tracingOn()).to.equal(false);
      const caller = callerTrace();
      const { id, event } = await tenant.observe({ traceparent: caller.traceparent });
      expect(event.metadata.correlationId).to.equal(caller.traceId);
      expect(event.metadata).to.not.have.property('traceparent');

      const delivered = await eventually(
        () =>
          Promise.resolve(
            receiver.received.find((r) => r.body?.data?.observationId === id && r.status === 204),
          ),
        10_000,
        'the delivery',
      );
      expect(delivered.verified).to.equal(true);
      expect(delivered.headers).to.not.have.property('traceparent');
    });
  });
});
