import { responseBodyLimit } from './sender.js';
import { externalEventTypes } from './external.js';
import { fields } from '../openapi/components.js';
import {
  boolean,
  dateTime,
  enumOf,
  integer,
  nullable,
  object,
  string,
  type Schema,
} from '../openapi/schema.js';
import { envelope, eventType, eventTypes, schemaName } from './events.openapi.js';

export { webhookEvents } from './events.openapi.js';
export { webhookOperations } from './operations.openapi.js';

/**
 * Webhook subscriptions and their deliveries, and what receivers get (the document's `webhooks`): the
 * schemas here, the routes in operations.openapi.ts, the events in events.openapi.ts.
 */

const subscription = {
  id: fields.id('w'),
  tenantId: fields.tenantId,
  url: string({ format: 'uri' }),
  events: eventTypes,
  status: enumOf(['active', 'disabled']),
  disabledReason: { type: ['string', 'null'] },
  disabledAt: nullable(dateTime()),
  createdAt: dateTime(),
};

const shownSecret = string({
  pattern: '^whsec_[A-Za-z0-9+/]+={0,2}$',
  description:
    'The secret in the Standard Webhooks form, as their libraries take it: `new Webhook(secret)`. Keep it: it is never shown again',
});

export const webhookSchemas: Record<string, Schema> = {
  WebhookSubscription: object(
    subscription,
    {},
    { description: 'A webhook subscription; its secret is returned only when it is created or rotated' },
  ),
  CreatedWebhookSubscription: object(
    { ...subscription, secret: shownSecret },
    {},
    { description: 'The new subscription, with its secret: the only answer that holds it' },
  ),
  RotatedWebhookSubscription: object(
    {
      ...subscription,
      secret: shownSecret,
      previousSecretExpiresAt: dateTime(
        'Until then the previous secret signs too, as a second signature in `webhook-signature`',
      ),
    },
    {},
    { description: 'The subscription with its new secret, shown in this answer only' },
  ),
  WebhookTestResult: object(
    {
      deliveryId: string({ pattern: '^d_[0-9a-f]{26}$' }),
      eventId: string({ pattern: '^evt_test_' }),
      eventType: eventType,
      ok: boolean({ description: 'The receiver answered 2xx' }),
      statusCode: { type: ['integer', 'null'], description: 'null when nothing answered' },
      durationMs: { type: 'number', minimum: 0 },
      error: { type: ['string', 'null'] },
      responseBody: {
        type: ['string', 'null'],
        description: `The first ${responseBodyLimit} bytes of the receiver's answer, as text; null when nothing answered`,
      },
    },
    {},
    { description: 'The outcome of the one attempt of a test event' },
  ),
  EnabledWebhookSubscription: object(
    { ...subscription, replayed: integer(0, undefined, { description: 'Missed events scheduled again' }) },
    {},
    { description: 'The subscription, active again' },
  ),
  Delivery: object(
    {
      id: string({ pattern: '^d_[0-9a-f]{26}$' }),
      deliveryId: string({ pattern: '^d_[0-9a-f]{26}$' }),
      tenantId: fields.tenantId,
      webhookId: fields.id('w'),
      eventId: string({ pattern: '^evt_' }),
      eventType: eventType,
      status: enumOf(['scheduled', 'claimed', 'succeeded', 'failed', 'cancelled']),
      attempts: integer(0),
      dueAt: nullable(dateTime()),
      claimedAt: nullable(dateTime()),
      manual: boolean({ description: 'A redelivery: one attempt that neither retries nor disables' }),
      test: boolean({ description: 'A test event (`POST …/test`), which is manual too' }),
      updatedAt: dateTime(),
    },
    {},
    { description: 'One event on its way to one subscription' },
  ),
  DeliveryAttempt: object(
    {
      id: string(),
      deliveryId: string({ pattern: '^d_[0-9a-f]{26}$' }),
      webhookId: fields.id('w'),
      eventId: string({ pattern: '^evt_' }),
      eventType: eventType,
      attempt: integer(1),
      attemptedAt: dateTime(),
      status: enumOf(['succeeded', 'failed']),
      statusCode: { type: ['integer', 'null'] },
      durationMs: { type: 'number', minimum: 0 },
      error: { type: ['string', 'null'] },
      nextAttemptAt: nullable(dateTime()),
    },
    {
      responseBody: string({
        description: `The first ${responseBodyLimit} bytes of the receiver's answer, as text; absent when nothing answered, and on attempts recorded before it was kept`,
      }),
    },
    { description: 'One attempt to deliver' },
  ),
  ...Object.fromEntries(externalEventTypes.map((type) => [schemaName(type), envelope(type)])),
};
