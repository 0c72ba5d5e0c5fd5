import { failingAfter, healthWindow } from '../../projections/webhook-health.js';
import { replayLimit } from './codecs.js';
import { responseBodyLimit } from './sender.js';
import { externalEventTypes } from './external.js';
import { fields } from '../openapi/components.js';
import {
  arrayOf,
  boolean,
  dateTime,
  enumOf,
  integer,
  nullable,
  number,
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
  status: enumOf(['active', 'paused', 'disabled'], {
    description:
      'Paused by a user (`POST …/pause`: nothing is sent, and what happens meanwhile goes out on resume), or disabled by failures or by its owner losing a scope',
  }),
  disabledReason: { type: ['string', 'null'] },
  disabledAt: nullable(dateTime()),
  pausedAt: nullable(dateTime()),
  createdAt: dateTime(),
};

const health = object(
  {
    window: integer(1, undefined, { description: 'How many of the latest attempts `successRate` covers' }),
    attempts: integer(0, healthWindow, { description: 'Attempts in the window (fewer while it fills)' }),
    successRate: nullable(
      number(0, 1, { description: 'Succeeded attempts in the window, over `attempts`; null before any' }),
    ),
    lastAttemptAt: nullable(dateTime()),
    lastAttemptStatus: nullable(enumOf(['succeeded', 'failed'])),
    lastStatusCode: { type: ['integer', 'null'], description: 'null when nothing answered' },
    lastSuccessAt: nullable(dateTime()),
    consecutiveFailures: integer(0, undefined, { description: 'Failed attempts since the last success' }),
    failing: boolean({
      description: `The last ${failingAfter} attempts all failed, or the subscription was disabled`,
    }),
  },
  {},
  {
    description:
      'The receiver as its latest attempts found it (tests and redeliveries count too), from a read model: it may lag an attempt by a moment',
  },
);

const withHealth = { ...subscription, health };

const sentRequest = object(
  {
    url: string({ format: 'uri' }),
    headers: {
      type: 'object',
      additionalProperties: { type: 'string' },
      description:
        'The headers sent: `webhook-id`, `webhook-timestamp`, `webhook-signature`, `X-Service-Signature`, `content-type`, `user-agent`. The signatures are shown; the secret never is',
    },
  },
  {},
  { description: "The request as sent; its body is the delivery's `payload` in canonical JSON" },
);

/** What an attempt was and what came of it: the delivery log's and an attempt's details. */
const attemptOutcome = {
  attempt: integer(1),
  attemptedAt: dateTime(),
  status: enumOf(['succeeded', 'failed']),
  statusCode: { type: ['integer', 'null'] },
  durationMs: { type: 'number', minimum: 0 },
  error: { type: ['string', 'null'] },
};

const deliveryFields = {
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
};

const shownSecret = string({
  pattern: '^whsec_[A-Za-z0-9+/]+={0,2}$',
  description:
    'The secret in the Standard Webhooks form, as their libraries take it: `new Webhook(secret)`. Keep it: it is never shown again',
});

export const webhookSchemas: Record<string, Schema> = {
  WebhookSubscription: object(
    withHealth,
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
    { ...withHealth, replayed: integer(0, undefined, { description: 'Missed events scheduled again' }) },
    {},
    { description: 'The subscription, active again' },
  ),
  PausedWebhookSubscription: object(withHealth, {}, { description: 'The subscription, paused' }),
  ResumedWebhookSubscription: object(
    {
      ...withHealth,
      replayed: integer(0, undefined, {
        description: 'Deliveries the pause held back, now scheduled in the order they happened',
      }),
    },
    {},
    { description: 'The subscription, active again' },
  ),
  WebhookReplayResult: object(
    {
      replayed: integer(0, replayLimit, { description: 'Failed deliveries sent again, as redeliveries' }),
      more: boolean({ description: `${replayLimit} were sent: there may be more; ask again` }),
    },
    {},
    { description: 'What a replay sent again' },
  ),
  DeliveryDetails: object(
    {
      ...deliveryFields,
      payload: { type: 'object', description: 'The envelope sent, `{id, type, tenantId, timestamp, data}`' },
      attemptLog: arrayOf(
        object(
          {
            ...attemptOutcome,
            responseBody: {
              type: ['string', 'null'],
              description: `The first ${responseBodyLimit} bytes of the receiver's answer; null when nothing answered`,
            },
            nextAttemptAt: nullable(dateTime()),
            request: nullable(sentRequest),
          },
          {},
          { description: 'One attempt; `request` is null on attempts recorded before requests were kept' },
        ),
      ),
    },
    {},
    { description: 'One delivery with its payload and every attempt of it, oldest first' },
  ),
  Delivery: object(deliveryFields, {}, { description: 'One event on its way to one subscription' }),
  DeliveryAttempt: object(
    {
      id: string(),
      deliveryId: string({ pattern: '^d_[0-9a-f]{26}$' }),
      webhookId: fields.id('w'),
      eventId: string({ pattern: '^evt_' }),
      eventType: eventType,
      ...attemptOutcome,
      nextAttemptAt: nullable(dateTime()),
      test: boolean({ description: 'An attempt of a test event (`POST …/test`)' }),
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
