import { failureCodes } from '../cv/models/port.js';
import { externalEventTypes, type ExternalEventType } from './external.js';
import { fields } from '../openapi/components.js';
import {
  dateTime,
  enumOf,
  fieldSchemas,
  object,
  ref,
  schemaOf,
  string,
  type Schema,
} from '../openapi/schema.js';
import { VisitCodec } from '../visits/codecs.js';
import { EventTypeCodec, EventTypeList } from './codecs.js';
import { observationFieldSchemas } from '../observations/openapi.js';

// What receivers get: the envelope of each external event type, and the document's `webhooks`.

/** An external event type (src/webhooks/external.ts): the webhooks' own vocabulary. */
export const eventType = schemaOf(EventTypeCodec);

/** The event types a subscription lists. */
export const eventTypes = schemaOf(EventTypeList);

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
      ...fieldSchemas(VisitCodec.fields, [
        'locationId',
        'startedAt',
        'endedAt',
        'participants',
        'notes',
        'observationIds',
      ]),
      status: { type: 'string', const: 'submitted' },
      submittedAt: dateTime(),
    },
    {},
    { description: 'The visit as submitted' },
  ),
};

export const schemaName = (type: ExternalEventType) =>
  `${type
    .split('.')
    .map((part) => part[0]!.toUpperCase() + part.slice(1))
    .join('')}Event`;

export const envelope = (type: ExternalEventType): Schema =>
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
