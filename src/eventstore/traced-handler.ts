import { inSpan, SpanKind, SpanStatusCode, eventAttributes, tracingOn } from '../core/spans.js';
import type { PersistentHandler } from './port.js';

/**
 * A persistent consumer's handler whose every delivery is the CONSUMER span `consume <group>`, in the trace
 * of the event delivered (a new trace for an event that carries none). A nack is the span's error.
 */
export const tracedHandler =
  (group: string, handler: PersistentHandler): PersistentHandler =>
  (delivery) =>
    tracingOn()
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
