import { failureCodes } from '../cv/models/port.js';
import { CreateWebhookBody, DeliveriesQuery, EnableBody } from './codecs.js';
import { externalEventTypes, type ExternalEventType } from './external.js';
import { fields, page } from '../openapi/components.js';
import { operation, type BuiltOperation } from '../openapi/operation.js';
import {
  arrayOf,
  boolean,
  dateTime,
  enumOf,
  integer,
  nullable,
  object,
  ref,
  string,
  type Schema,
} from '../openapi/schema.js';
import { pagingQuery } from '../openapi/resource.js';
import { observationFieldSchemas } from '../observations/openapi.js';

/** Webhook subscriptions and their deliveries, and what receivers get (the document's `webhooks`). */

const eventTypes = arrayOf(fields.eventType, {
  minItems: 1,
  uniqueItems: true,
  description: 'A non-empty list of distinct event types',
});

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

/** `data` of each external event type (src/webhooks/external.ts). */
const eventData: Record<ExternalEventType, Schema> = {
  'observation.created': object(
    { observationId: fields.id('o'), ...observationFieldSchemas, version: fields.version },
    {},
    { description: 'The observation as recorded' },
  ),
  'observation.updated': object(
    {
      observationId: fields.id('o'),
      changes: object({}, observationFieldSchemas, {
        description: 'The new value of every field that changed (`attributes` whole, after the merge)',
      }),
      version: fields.version,
    },
    { mediaAdded: ref('Media') },
    { description: 'What changed; `mediaAdded` when an image was attached (then `changes` is empty)' },
  ),
  'cv.job.completed': object(
    {
      jobId: fields.id('j'),
      observationId: fields.resourceId,
      model: string(),
      status: { type: 'string', const: 'completed' },
      result: ref('ModelResult'),
    },
    {},
    { description: 'A CV job finished with a result' },
  ),
  'cv.job.failed': object(
    {
      jobId: fields.id('j'),
      observationId: fields.resourceId,
      model: string(),
      status: { type: 'string', const: 'failed' },
      error: object({ code: enumOf(failureCodes), message: string() }),
    },
    {},
    { description: 'A CV job failed' },
  ),
  'visit.submitted': object(
    {
      visitId: fields.id('v'),
      locationId: fields.resourceId,
      startedAt: dateTime(),
      endedAt: nullable(dateTime()),
      participants: arrayOf(string()),
      notes: nullable(string()),
      observationIds: arrayOf(string(), { description: 'The observations that belong to the visit' }),
      status: { type: 'string', const: 'submitted' },
      submittedAt: dateTime(),
    },
    {},
    { description: 'The visit as submitted' },
  ),
};

const schemaName = (type: ExternalEventType) =>
  `${type
    .split('.')
    .map((part) => part[0]!.toUpperCase() + part.slice(1))
    .join('')}Event`;

const envelope = (type: ExternalEventType): Schema =>
  object(
    {
      id: string({
        pattern: '^evt_',
        description:
          'Derived from the domain event: the same on every attempt and redelivery; deduplicate on it',
      }),
      type: { type: 'string', const: type },
      tenantId: fields.tenantId,
      timestamp: dateTime('When the fact happened'),
      data: eventData[type],
    },
    {},
    { description: `The envelope of \`${type}\`` },
  );

export const webhookSchemas: Record<string, Schema> = {
  WebhookSubscription: object(
    subscription,
    {},
    { description: 'A webhook subscription; its secret is never returned' },
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
      eventType: fields.eventType,
      status: enumOf(['scheduled', 'claimed', 'succeeded', 'failed', 'cancelled']),
      attempts: integer(0),
      dueAt: nullable(dateTime()),
      claimedAt: nullable(dateTime()),
      manual: boolean({ description: 'A redelivery: one attempt that neither retries nor disables' }),
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
      eventType: fields.eventType,
      attempt: integer(1),
      attemptedAt: dateTime(),
      status: enumOf(['succeeded', 'failed']),
      statusCode: { type: ['integer', 'null'] },
      durationMs: { type: 'number', minimum: 0 },
      error: { type: ['string', 'null'] },
      nextAttemptAt: nullable(dateTime()),
    },
    {},
    { description: 'One attempt to deliver' },
  ),
  ...Object.fromEntries(externalEventTypes.map((type) => [schemaName(type), envelope(type)])),
};

const webhookId = { id: { description: "The subscription's id", schema: string() } };
const base = '/v1/tenants/:tenantId/webhooks';
const tag = 'Webhook subscriptions';
const access = { scope: 'webhooks:manage' } as const;

export const webhookOperations = (): BuiltOperation[] => [
  operation({
    method: 'post',
    path: base,
    operationId: 'createWebhook',
    summary: 'Subscribe a receiver',
    description:
      'The URL must be `https` (`http` only with WEBHOOK_ALLOW_HTTP) and must not be or resolve to a ' +
      'loopback, private, link-local or otherwise reserved address (400, in the same words whatever the ' +
      'reason). Each listed type needs the read scope of its data besides `webhooks:manage`: ' +
      '`observations:read` for `observation.*` and `visit.submitted`, `cv:read` for `cv.job.*` (403 naming ' +
      'it); the subscription is disabled when its owner loses it. At most WEBHOOK_MAX_SUBSCRIPTIONS (50) per ' +
      'tenant: one more gets 409.',
    tag,
    access,
    body: {
      codec: CreateWebhookBody,
      name: 'CreateWebhookRequest',
      properties: {
        url: string({
          minLength: 1,
          maxLength: 2048,
          format: 'uri',
          examples: ['https://example.com/hooks'],
        }),
        events: eventTypes,
        secret: string({
          minLength: 16,
          maxLength: 256,
          description: 'Signs every delivery; never returned',
        }),
      },
      mediaTypes: ['application/json'],
      json: true,
    },
    responses: {
      '201': {
        description: 'Subscribed',
        headers: ['Location', 'ETag', 'X-Position'],
        content: { 'application/json': ref('WebhookSubscription') },
      },
    },
  }),
  operation({
    method: 'get',
    path: base,
    operationId: 'listWebhooks',
    summary: 'List subscriptions',
    tag,
    access,
    query: pagingQuery,
    responses: {
      '200': {
        description: 'A page',
        content: { 'application/json': page(ref('WebhookSubscription'), 'A page of subscriptions') },
      },
    },
  }),
  operation({
    method: 'get',
    path: `${base}/:id`,
    operationId: 'getWebhook',
    summary: 'Read a subscription',
    tag,
    access,
    pathParameters: webhookId,
    responses: {
      '200': { description: 'The subscription', content: { 'application/json': ref('WebhookSubscription') } },
    },
  }),
  operation({
    method: 'delete',
    path: `${base}/:id`,
    operationId: 'deleteWebhook',
    summary: 'Delete a subscription',
    tag,
    access,
    pathParameters: webhookId,
    responses: { '204': { description: 'Deleted' } },
  }),
  operation({
    method: 'post',
    path: `${base}/:id/enable`,
    operationId: 'enableWebhook',
    summary: 'Enable a disabled subscription',
    description:
      'With `replayMissed: true`, the events it missed while disabled are delivered too. The body is optional.',
    tag,
    access,
    pathParameters: webhookId,
    body: {
      codec: EnableBody,
      name: 'EnableWebhookRequest',
      properties: { replayMissed: boolean({ default: false }) },
      mediaTypes: ['application/json'],
      required: false,
      json: true,
    },
    responses: {
      '200': {
        description: 'Active again',
        headers: ['ETag', 'X-Position'],
        content: { 'application/json': ref('EnabledWebhookSubscription') },
      },
    },
  }),
  operation({
    method: 'get',
    path: `${base}/:id/deliveries`,
    operationId: 'listDeliveryAttempts',
    summary: 'The delivery log',
    description: 'Every attempt, newest first.',
    tag,
    access,
    pathParameters: webhookId,
    query: {
      codec: DeliveriesQuery,
      parameters: {
        ...pagingQuery.parameters,
        status: { schema: enumOf(['succeeded', 'failed']), description: 'Only attempts with this outcome' },
        eventType: { schema: fields.eventType, description: 'Only this event type' },
      },
    },
    responses: {
      '200': {
        description: 'A page',
        content: { 'application/json': page(ref('DeliveryAttempt'), 'A page of attempts') },
      },
    },
  }),
  operation({
    method: 'post',
    path: `${base}/:id/deliveries/:deliveryId/redeliver`,
    operationId: 'redeliver',
    summary: 'Send a delivery again',
    description: 'One more attempt, with the same envelope id.',
    tag,
    access,
    pathParameters: { ...webhookId, deliveryId: { description: "The delivery's id", schema: string() } },
    responses: {
      '202': { description: 'Scheduled', content: { 'application/json': ref('Delivery') } },
    },
  }),
];

const signatureHeaders = [
  {
    name: 'X-Service-Signature',
    description: 'Lower-case hex HMAC-SHA256 of the raw body, keyed with the subscription secret',
    schema: string({ pattern: '^[0-9a-f]{64}$' }),
  },
  {
    name: 'webhook-id',
    description: 'Standard Webhooks: the envelope id',
    schema: string(),
  },
  {
    name: 'webhook-timestamp',
    description: 'Standard Webhooks: Unix seconds; refuse one more than a few minutes from your clock',
    schema: string({ pattern: '^\\d+$' }),
  },
  {
    name: 'webhook-signature',
    description:
      'Standard Webhooks: `v1,` and the base64 HMAC-SHA256 of `<webhook-id>.<webhook-timestamp>.<raw body>`',
    schema: string(),
  },
].map((header) => ({ ...header, in: 'header', required: true }));

const eventSummaries: Record<ExternalEventType, string> = {
  'observation.created': 'an observation was recorded',
  'observation.updated': 'an observation changed, or an image was attached to it',
  'cv.job.completed': 'a CV job finished',
  'cv.job.failed': 'a CV job failed',
  'visit.submitted': 'a field visit was submitted',
};

/** OpenAPI 3.1 `webhooks`: what the service POSTs to each subscribed URL. */
export const webhookEvents = () =>
  Object.fromEntries(
    externalEventTypes.map((type) => [
      type,
      {
        post: {
          operationId: `on${schemaName(type).replace(/Event$/, '')}`,
          summary: `${type}: ${eventSummaries[type]}`,
          description:
            'Delivered to every active subscription that lists the type, signed (see the headers). Answer ' +
            '2xx within WEBHOOK_TIMEOUT (30 s); anything else is retried after 1m, 5m, 30m, 2h and 24h, and a ' +
            'subscription whose retries all fail is disabled. Deduplicate on `id`.',
          tags: ['Webhook events'],
          security: [],
          parameters: signatureHeaders,
          requestBody: {
            required: true,
            content: { 'application/json': { schema: ref(schemaName(type)) } },
          },
          responses: {
            '200': { description: 'Received; any 2xx will do' },
            '400': { description: 'Refused (a bad signature, say): the delivery is retried' },
          },
        },
      },
    ]),
  );
