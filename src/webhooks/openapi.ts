import { failureCodes } from '../cv/models/port.js';
import { CreateWebhookBody, DeliveriesQuery, EnableBody, RotateSecretBody, TestEventBody } from './codecs.js';
import { responseBodyLimit } from './sender.js';
import { externalEventTypes, type ExternalEventType } from './external.js';
import { exampleIds, fields, page } from '../openapi/components.js';
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

/** An external event type (src/webhooks/external.ts): the webhooks' own vocabulary. */
const eventType = enumOf(externalEventTypes);

const eventTypes = arrayOf(eventType, {
  minItems: 1,
  maxItems: externalEventTypes.length,
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

const webhookId = { id: { description: "The subscription's id", example: exampleIds.webhook } };
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
      example: { url: 'https://example.com/hooks', events: ['observation.created', 'visit.submitted'] },
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
          format: 'password',
          description:
            'Optional: the service generates one when it is left out (recommended). Either the Standard ' +
            'Webhooks form, `whsec_` and the base64 of 24 to 64 bytes (the key is the decoded bytes), or a plain ' +
            'secret of 16 to 256 characters (the key is its UTF-8 bytes). Either must look random: at least 8 ' +
            'different characters (or byte values), and no control characters. The answer shows it once, in ' +
            'the standard form.',
          examples: ['whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw'],
        }),
      },
      mediaTypes: ['application/json'],
      json: true,
    },
    responses: {
      '201': {
        description: 'Subscribed; the only answer with the secret',
        headers: ['Location', 'ETag', 'X-Position'],
        content: { 'application/json': ref('CreatedWebhookSubscription') },
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
      example: { replayMissed: true },
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
    method: 'post',
    path: `${base}/:id/secret/rotate`,
    operationId: 'rotateWebhookSecret',
    summary: 'Rotate the secret',
    description:
      'Replaces the secret with a new one, generated unless given, shown in this answer only. For 24 hours the ' +
      'previous secret signs too: `webhook-signature` then carries both signatures, so receivers can switch ' +
      'without losing a delivery. `X-Service-Signature` uses the new secret at once. The body is optional.',
    tag,
    access,
    pathParameters: webhookId,
    body: {
      codec: RotateSecretBody,
      name: 'RotateWebhookSecretRequest',
      // The secret left out: the service generates one, as is best.
      example: {},
      properties: {
        secret: string({
          minLength: 16,
          maxLength: 256,
          format: 'password',
          description: 'As at creation; generated when left out',
        }),
      },
      mediaTypes: ['application/json'],
      required: false,
      json: true,
    },
    responses: {
      '200': {
        description: 'Rotated',
        headers: ['ETag', 'X-Position'],
        content: { 'application/json': ref('RotatedWebhookSubscription') },
      },
    },
  }),
  operation({
    method: 'post',
    path: `${base}/:id/test`,
    operationId: 'sendWebhookTest',
    summary: 'Send a test event',
    description:
      'Sends a signed example event of the chosen type (the first the subscription lists by default) to the ' +
      'receiver as soon as the subscription has a slot (test events count towards the same concurrency limits ' +
      "as deliveries, ahead of the subscription's waiting deliveries), and answers with the attempt's outcome, " +
      "whatever the receiver answered. The event's " +
      'id starts `evt_test_` and its data name no real resource; it has the shape of a real delivery of its ' +
      'type. The attempt is in the delivery log. It is never retried, does not count towards disabling the ' +
      'subscription, and is sent to a disabled subscription too. A type that the owner of the subscription ' +
      'may not read is refused with 409, and nothing is sent. The body is optional.',
    tag,
    access,
    pathParameters: webhookId,
    body: {
      codec: TestEventBody,
      name: 'WebhookTestRequest',
      example: { type: 'observation.created' },
      properties: { type: eventType },
      mediaTypes: ['application/json'],
      required: false,
      json: true,
    },
    responses: {
      '200': {
        description: "The attempt's outcome",
        content: { 'application/json': ref('WebhookTestResult') },
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
        eventType: { schema: eventType, description: 'Only this event type' },
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
    pathParameters: {
      ...webhookId,
      deliveryId: { description: "The delivery's id", example: exampleIds.delivery },
    },
    responses: {
      '202': { description: 'Scheduled', content: { 'application/json': ref('Delivery') } },
    },
  }),
];

const signatureHeaders = [
  {
    name: 'X-Service-Signature',
    description:
      "Lower-case hex HMAC-SHA256 of the raw body, keyed with the secret's key: the decoded bytes of a `whsec_` secret, the UTF-8 bytes of a plain one",
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
      'Standard Webhooks: `v1,` and the base64 HMAC-SHA256 of `<webhook-id>.<webhook-timestamp>.<raw body>`; ' +
      'for 24 hours after a rotation, a second signature with the previous secret follows, after a space',
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
