import { toEnvelope } from '../src/core/command-handler.js';
import type { Projection } from '../src/readmodels/projection.js';
import { aggregateProjection, platformPartition } from '../src/readmodels/aggregate-projection.js';
import type { Delivery, DeliveryEvent, DeliveryState } from '../src/webhooks/delivery.decider.js';
import { deliveryDecider, deliveryEventTypes } from '../src/webhooks/delivery.decider.js';
import type { WebhookEvent, WebhookSubscription } from '../src/webhooks/subscription.decider.js';
import { evolveSubscription, webhookEventTypes } from '../src/webhooks/subscription.decider.js';
import { textFields } from '../src/readmodels/fields.js';

/** A tenant's webhook subscriptions for the list endpoint; the sealed secrets stay in the event stream. */
export const webhooksProjection: Projection<WebhookSubscription> = {
  name: 'webhooks',
  collection: {
    name: 'webhooks',
    fields: textFields('createdAt'),
    indexes: [['createdAt']],
  },
  eventTypes: webhookEventTypes,
  documentKey: (event) => ({
    tenantId: event.metadata.tenantId,
    id: (event.data as WebhookEvent['data']).webhookId,
  }),
  evolve: (doc, event) => evolveSubscription(doc, toEnvelope<WebhookEvent>(event)),
};

/** Every delivery's state, across tenants: what the sweep reads to find due attempts. */
export const deliveriesProjection = aggregateProjection({
  name: 'webhook_deliveries',
  collection: {
    name: 'webhook_deliveries',
    fields: textFields('tenantId', 'webhookId', 'status', 'dueAt', 'claimedAt'),
    // The sweep serves subscriptions round-robin (src/webhooks/sweep.ts): the first index finds the next
    // subscription with scheduled deliveries, the second its oldest due. Files made before keep the index
    // (status, dueAt) that the sweep used until then; nothing reads it any more.
    indexes: [
      ['status', 'webhookId'],
      ['status', 'webhookId', 'dueAt'],
      ['status', 'claimedAt'],
    ],
  },
  decider: deliveryDecider,
  eventTypes: deliveryEventTypes,
  creates: ['DeliveryScheduled'],
  key: (event) => ({ tenantId: platformPartition, id: event.data.deliveryId }),
  toState: (doc: Omit<Delivery, 'payload'> | null): DeliveryState =>
    doc ? { status: 'present', delivery: doc as Delivery } : { status: 'absent' },
  // The payload is in the event stream; the sweep needs only the state.
  toDoc: (state) => {
    if (state.status === 'absent') return null;
    const { payload: _payload, ...delivery } = state.delivery;
    return delivery;
  },
});

export interface DeliveryAttemptRecord {
  id: string;
  deliveryId: string;
  webhookId: string;
  eventId: string;
  eventType: string;
  attempt: number;
  attemptedAt: string;
  status: 'succeeded' | 'failed';
  statusCode: number | null;
  durationMs: number;
  error: string | null;
  nextAttemptAt: string | null;
  /** Sent by `POST …/test`; false for attempts recorded before test attempts were marked. */
  test: boolean;
}

/** The log of every attempt, per tenant, for GET .../webhooks/{id}/deliveries. */
export const deliveryAttemptsProjection: Projection<DeliveryAttemptRecord> = {
  name: 'webhook_delivery_attempts',
  collection: {
    name: 'webhook_delivery_attempts',
    fields: textFields('webhookId', 'status', 'eventType', 'attemptedAt', 'test'),
    indexes: [['webhookId', 'attemptedAt']],
  },
  eventTypes: ['DeliveryAttempted'],
  creates: ['DeliveryAttempted'],
  documentKey: (event) => {
    const data = event.data as Extract<DeliveryEvent, { type: 'DeliveryAttempted' }>['data'];
    return { tenantId: event.metadata.tenantId, id: `${data.deliveryId}.${data.attempt}` };
  },
  evolve: (_doc, event) => {
    // The request sent (its headers) is shown by the attempt's details, read from the delivery's stream.
    const {
      ok,
      request: _request,
      test,
      ...data
    } = event.data as Extract<DeliveryEvent, { type: 'DeliveryAttempted' }>['data'];
    return {
      id: `${data.deliveryId}.${data.attempt}`,
      ...data,
      attemptedAt: event.metadata.occurredAt,
      status: ok ? 'succeeded' : 'failed',
      test: test === true,
    };
  },
};
