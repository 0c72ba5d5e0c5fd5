import {
  context,
  isSpanContextValid,
  ROOT_CONTEXT,
  SpanKind,
  SpanStatusCode,
  trace,
  type Attributes,
  type Context,
  type Span,
  type Tracer,
} from '@opentelemetry/api';
import type { Logger } from 'pino';
import type { RecordedEvent } from '../core/events.js';
import type { EventStore, PersistentHandler } from '../eventstore/port.js';
import { formatTraceparent, parseTraceparent } from './traceparent.js';

export { formatTraceparent, parseTraceparent, type TraceParent } from './traceparent.js';

/**
 * Traces through @opentelemetry/api only. The SDK is loaded, and a tracer kept here, only when an OTLP
 * endpoint is configured (or a test registers its own provider); until then `tracer` is null and every
 * helper below returns after one comparison, so the hot path pays nothing for tracing it does not do.
 */
let tracer: Tracer | null = null;

export const tracingOn = (): boolean => tracer !== null;

export { SpanKind, SpanStatusCode };

/** What a registered SDK provider offers: NodeTracerProvider has both. */
export interface TracerProviderLike {
  register(): void;
  getTracer(name: string): Tracer;
  shutdown(): Promise<void>;
}

export interface Tracing {
  /** Flushes the spans not yet exported, and turns tracing off. */
  shutdown(): Promise<void>;
}

const instrumentationName = 'observation-service';

/**
 * Registers the provider as the process's (with its AsyncLocalStorage context manager) and turns tracing on.
 * Shutting it down unregisters it again, so a process (or a test) can register another one later.
 */
export const useTracerProvider = (provider: TracerProviderLike): Tracing => {
  provider.register();
  tracer = provider.getTracer(instrumentationName);
  return {
    shutdown: async () => {
      tracer = null;
      try {
        await provider.shutdown();
      } finally {
        trace.disable();
        context.disable();
      }
    },
  };
};

const off: Tracing = { shutdown: () => Promise.resolve() };

/** The OTLP/HTTP traces URL of a base endpoint, as the OTLP exporter specification derives it. */
export const tracesUrl = (endpoint: string): string => `${endpoint.replace(/\/+$/, '')}/v1/traces`;

/**
 * Starts the SDK when OTEL_EXPORTER_OTLP_ENDPOINT is set: spans are batched and exported over OTLP/HTTP to
 * `<endpoint>/v1/traces`, under the service name OTEL_SERVICE_NAME. Imported dynamically, so a service
 * without the setting never loads the SDK.
 */
export const startTracing = async (
  settings: { endpoint: string | null; serviceName?: string },
  logger: Logger,
): Promise<Tracing> => {
  if (!settings.endpoint) return off;
  const serviceName = settings.serviceName ?? 'observation-service';
  const [{ NodeTracerProvider, BatchSpanProcessor }, { OTLPTraceExporter }, { resourceFromAttributes }] =
    await Promise.all([
      import('@opentelemetry/sdk-trace-node'),
      import('@opentelemetry/exporter-trace-otlp-http'),
      import('@opentelemetry/resources'),
    ]);
  const url = tracesUrl(settings.endpoint);
  const provider = new NodeTracerProvider({
    resource: resourceFromAttributes({ 'service.name': serviceName }),
    spanProcessors: [new BatchSpanProcessor(new OTLPTraceExporter({ url }))],
  });
  logger.info({ url, serviceName }, 'traces exported over OTLP/HTTP');
  return useTracerProvider(provider);
};

/** The context of a remote parent named by a traceparent; the root context (a new trace) without one. */
const contextOf = (traceparent: string | null | undefined): Context => {
  const parent = parseTraceparent(traceparent ?? undefined);
  return parent ? trace.setSpanContext(ROOT_CONTEXT, { ...parent, isRemote: true }) : ROOT_CONTEXT;
};

/** The active span, or undefined when tracing is off or nothing is being traced. */
export const activeSpan = (): Span | undefined => (tracer ? trace.getActiveSpan() : undefined);

/** The traceparent of the active span: what the events written now carry, and outgoing requests send. */
export const activeTraceparent = (): string | undefined => {
  const spanContext = activeSpan()?.spanContext();
  return spanContext && isSpanContextValid(spanContext) ? formatTraceparent(spanContext) : undefined;
};

const failed = (span: Span, error: unknown) => {
  span.recordException(error instanceof Error ? error : String(error));
  span.setStatus({ code: SpanStatusCode.ERROR, message: (error as Error)?.message ?? String(error) });
};

export interface SpanRequest {
  kind?: SpanKind;
  attributes?: Attributes;
  /**
   * The trace to continue: a stored traceparent, or null for a new trace. Left out, the active span is the
   * parent (the request's span for a command, say).
   */
  parent?: string | null;
}

/** Runs `work` as the active span `name`, which ends (with the error, if any) when the work settles. */
export const inSpan = async <T>(
  name: string,
  request: SpanRequest,
  work: (span: Span | undefined) => Promise<T>,
): Promise<T> => {
  if (!tracer) return work(undefined);
  const parent = request.parent === undefined ? context.active() : contextOf(request.parent);
  const span = tracer.startSpan(
    name,
    { kind: request.kind ?? SpanKind.INTERNAL, attributes: request.attributes },
    parent,
  );
  try {
    return await context.with(trace.setSpan(parent, span), () => work(span));
  } catch (error) {
    failed(span, error);
    throw error;
  } finally {
    span.end();
  }
};

/** Attributes that name a stored event on the spans of its consumers. */
export const eventAttributes = (event: RecordedEvent): Attributes => ({
  'event.id': event.id,
  'event.type': event.type,
  'event.position': event.position,
  'event_store.stream': event.streamName,
});

/**
 * One CONSUMER span `name` per event of a batch that carries a traceparent, each in that event's trace and
 * open while the batch is handled (its documents are committed together). Events written before tracing,
 * or without it, get none: a replay of old history makes no flood of new traces.
 */
export const inEventSpans = async <T>(
  name: string,
  events: readonly RecordedEvent[],
  attributes: Attributes,
  work: () => Promise<T>,
): Promise<T> => {
  const active = tracer;
  if (!active) return work();
  const spans = events
    .filter((event) => event.metadata.traceparent !== undefined)
    .map((event) =>
      active.startSpan(
        name,
        { kind: SpanKind.CONSUMER, attributes: { ...attributes, ...eventAttributes(event) } },
        contextOf(event.metadata.traceparent),
      ),
    );
  try {
    return await work();
  } catch (error) {
    for (const span of spans) failed(span, error);
    throw error;
  } finally {
    for (const span of spans) span.end();
  }
};

/**
 * Runs `work` in a span that continues the trace of a stream's event: the last one (`at: 'last'`, what
 * made a delivery due) or the first (what started a job). The stream is read only when tracing is on.
 */
export const inStreamSpan = async <T>(
  name: string,
  source: { eventStore: Pick<EventStore, 'readStream'>; stream: string; at: 'first' | 'last' },
  request: Omit<SpanRequest, 'parent'>,
  work: (span: Span | undefined) => Promise<T>,
): Promise<T> => {
  if (!tracer) return work(undefined);
  const { eventStore, stream, at } = source;
  const events = await eventStore.readStream(stream, at === 'first' ? { maxCount: 1 } : {});
  const event = at === 'first' ? events[0] : events.at(-1);
  return inSpan(name, { ...request, parent: event?.metadata.traceparent ?? null }, work);
};

/**
 * A persistent consumer's handler whose every delivery is the CONSUMER span `consume <group>`, in the trace
 * of the event delivered (a new trace for an event that carries none). A nack is the span's error.
 */
export const tracedHandler =
  (group: string, handler: PersistentHandler): PersistentHandler =>
  (delivery) =>
    tracer
      ? inSpan(
          `consume ${group}`,
          {
            kind: SpanKind.CONSUMER,
            parent: delivery.event.metadata.traceparent ?? null,
            attributes: {
              'consumer.group': group,
              'consumer.retry_count': delivery.retryCount,
              ...eventAttributes(delivery.event),
            },
          },
          async (span) => {
            const outcome = await handler(delivery);
            if (outcome.kind === 'nack') {
              span?.setStatus({
                code: SpanStatusCode.ERROR,
                message: `${outcome.action}: ${outcome.reason}`,
              });
            }
            return outcome;
          },
        )
      : handler(delivery);
