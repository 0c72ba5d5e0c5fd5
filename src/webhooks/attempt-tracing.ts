import { streamName } from '../core/streams.js';
import type { EventStore } from '../eventstore/port.js';
import { inStreamSpan, SpanKind } from '../observability/tracing.js';

/** With traces on, an attempt is the CLIENT span `webhook attempt`, in the trace of what made it due. */
export const attemptTracer =
  (eventStore: EventStore) =>
  <T>(tenantId: string, deliveryId: string, webhookId: string, attempt: () => Promise<T>) =>
    inStreamSpan(
      'webhook attempt',
      { eventStore, stream: streamName('delivery', tenantId, deliveryId), at: 'last' },
      { kind: SpanKind.CLIENT, attributes: { 'webhook.id': webhookId, 'webhook.delivery_id': deliveryId } },
      attempt,
    );

export type AttemptTracer = ReturnType<typeof attemptTracer>;
