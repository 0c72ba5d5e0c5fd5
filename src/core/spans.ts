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
import type { RecordedEvent } from './events.js';
import { formatTraceparent, parseTraceparent } from './traceparent.js';

/**
 * Spans through @opentelemetry/api only, for every layer: the command handler, the runners, the routes. The
 * SDK is loaded and a tracer set here only when an OTLP endpoint is configured (src/observability/tracing.ts)
 * or a test registers its own provider; until then `tracer` is null and every helper below returns after
 * one comparison, so the hot path pays nothing for tracing it does not do.
 */
let tracer: Tracer | null = null;

export const tracingOn = (): boolean => tracer !== null;

/** Turns spans on with a registered provider's tracer, or off with null (src/observability/tracing.ts). */
export const setTracer = (next: Tracer | null): void => {
  tracer = next;
};

export { SpanKind, SpanStatusCode };

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
