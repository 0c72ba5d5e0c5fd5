import {
  CreateWebhookBody,
  DeliveriesQuery,
  EnableBody,
  ReplayBody,
  replayLimit,
  RotateSecretBody,
  TestEventBody,
} from './codecs.js';
import { exampleIds } from '../openapi/components.js';
import { operation, type BuiltOperation } from '../openapi/operation.js';
import { ref } from '../openapi/schema.js';
import { changedResponse, createdResponse, pageResponse, pagingQuery } from '../openapi/resource.js';

// The routes of webhook subscriptions and their deliveries (schemas: openapi.ts).

const webhookId = { id: { description: "The subscription's id", example: exampleIds.webhook } };
const deliveryPath = {
  ...webhookId,
  deliveryId: { description: "The delivery's id", example: exampleIds.delivery },
};
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
      mediaTypes: ['application/json'],
      json: true,
    },
    responses: {
      '201': createdResponse('CreatedWebhookSubscription', 'Subscribed; the only answer with the secret'),
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
      '200': pageResponse('WebhookSubscription', 'A page of subscriptions'),
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
      mediaTypes: ['application/json'],
      required: false,
      json: true,
    },
    responses: {
      '200': changedResponse('EnabledWebhookSubscription', 'Active again'),
    },
  }),
  operation({
    method: 'post',
    path: `${base}/:id/pause`,
    operationId: 'pauseWebhook',
    summary: 'Pause a subscription',
    description:
      'While paused nothing is sent to the receiver (test events excepted, as for a disabled subscription), ' +
      'and nothing is lost: the events that happen meanwhile, and the retries that fall due, wait for ' +
      '`POST …/resume`. Redeliveries and replays are refused with 409 until then. Pausing a paused ' +
      'subscription changes nothing (200); a disabled one gets 409 (enable it first).',
    tag,
    access,
    pathParameters: webhookId,
    responses: { '200': changedResponse('PausedWebhookSubscription', 'Paused') },
  }),
  operation({
    method: 'post',
    path: `${base}/:id/resume`,
    operationId: 'resumeWebhook',
    summary: 'Resume a paused subscription',
    description:
      'Active again: what the pause held back is scheduled at once, in the order it happened, and goes out ' +
      "within the subscription's concurrency limit; `replayed` says how many deliveries. Resuming an active " +
      'subscription changes nothing (200, `replayed: 0`); a disabled one gets 409 (enable it instead).',
    tag,
    access,
    pathParameters: webhookId,
    responses: { '200': changedResponse('ResumedWebhookSubscription', 'Active again') },
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
      mediaTypes: ['application/json'],
      required: false,
      json: true,
    },
    responses: {
      '200': changedResponse('RotatedWebhookSubscription', 'Rotated'),
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
        status: { description: 'Only attempts with this outcome' },
        eventType: { description: 'Only this event type' },
        test: { description: '`true`: only attempts of test events; `false`: only real ones' },
      },
    },
    responses: {
      '200': pageResponse('DeliveryAttempt', 'A page of attempts'),
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
    pathParameters: deliveryPath,
    responses: {
      '202': { description: 'Scheduled', content: { 'application/json': ref('Delivery') } },
    },
  }),
  operation({
    method: 'get',
    path: `${base}/:id/deliveries/:deliveryId`,
    operationId: 'getDelivery',
    summary: 'A delivery, with the request each attempt sent',
    description:
      'The payload, and every attempt with the request as sent (URL and headers, signatures included, ' +
      "never the secret), the receiver's status, the start of its answer, the duration and the error.",
    tag,
    access,
    pathParameters: deliveryPath,
    responses: {
      '200': { description: 'The delivery', content: { 'application/json': ref('DeliveryDetails') } },
    },
  }),
  operation({
    method: 'post',
    path: `${base}/:id/replay`,
    operationId: 'replayFailedDeliveries',
    summary: 'Send again what failed since a time',
    description:
      `Every delivery of this subscription that ended failed (its retries ran out, or its redelivery failed) ` +
      `with a failed attempt at or after \`since\` is sent once more, as a redelivery, oldest first: at most ` +
      `${replayLimit} per request (\`more\` then says to ask again). Test events are not sent again. 409 while paused.`,
    tag,
    access,
    pathParameters: webhookId,
    body: {
      codec: ReplayBody,
      name: 'ReplayFailedDeliveriesRequest',
      example: { since: '2026-05-01T00:00:00Z' },
      mediaTypes: ['application/json'],
      json: true,
    },
    responses: {
      '202': { description: 'Scheduled', content: { 'application/json': ref('WebhookReplayResult') } },
    },
  }),
];
