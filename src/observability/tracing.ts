import { context, trace, type Span, type Tracer } from '@opentelemetry/api';
import type { Logger } from 'pino';
import { inSpan, setTracer, tracingOn, type SpanRequest } from '../core/spans.js';
import type { EventStore } from '../eventstore/port.js';

export {
  activeSpan,
  activeTraceparent,
  eventAttributes,
  inEventSpans,
  inSpan,
  SpanKind,
  SpanStatusCode,
  tracingOn,
  type SpanRequest,
} from '../core/spans.js';
export { formatTraceparent, parseTraceparent, type TraceParent } from '../core/traceparent.js';

/**
 * The OpenTelemetry SDK: started when an OTLP endpoint is configured (or a test registers its own provider),
 * which sets the tracer that the span helpers of src/core/spans.ts use.
 */
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
  setTracer(provider.getTracer(instrumentationName));
  return {
    shutdown: async () => {
      setTracer(null);
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
  if (!tracingOn()) return work(undefined);
  const { eventStore, stream, at } = source;
  const events = await eventStore.readStream(stream, at === 'first' ? { maxCount: 1 } : {});
  const event = at === 'first' ? events[0] : events.at(-1);
  return inSpan(name, { ...request, parent: event?.metadata.traceparent ?? null }, work);
};
