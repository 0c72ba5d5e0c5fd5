import * as t from 'io-ts';
import {
  boundedString,
  DateTimeString,
  described,
  listOf,
  oneOf,
  paramOf,
  strictObject,
  withSchema,
} from '../http/codec.js';
import { pageParams } from '../http/paging.js';
import { externalEventTypes } from './external.js';
import { secretProblem } from './secrets.js';

/**
 * The request bodies and query strings of the webhook routes (src/webhooks/api.ts), described in
 * src/webhooks/openapi.ts.
 */

export const EventTypeCodec = oneOf<string>(externalEventTypes);

/** A short string as JSON and a space, to name it in a message; nothing for any other value. */
const quoted = (u: unknown): string =>
  typeof u === 'string' && u.length <= 64 ? `${JSON.stringify(u)} ` : '';

/** An event type a subscription can list; an unknown one is named in the message as well as by its path. */
const ListedEventType = withSchema(
  new t.Type<string, string, unknown>(
    EventTypeCodec.name,
    EventTypeCodec.is,
    (u, context) =>
      EventTypeCodec.is(u)
        ? t.success(u)
        : t.failure(u, context, `${quoted(u)}is not an event type: must be ${EventTypeCodec.name}`),
    t.identity,
  ),
  { type: 'string', enum: [...externalEventTypes] },
);

/** Each external type at most once: a longer list is refused before any item is read. */
export const EventTypeList = described(
  listOf(
    ListedEventType,
    { min: 1, max: externalEventTypes.length, distinct: true },
    'a non-empty list of distinct event types',
  ),
  { description: 'A non-empty list of distinct event types' },
);

/** A secret a tenant chooses (secrets.ts): the standard's `whsec_` form, or a plain one. */
const ChosenSecretAlone = new t.Type<string, string, unknown>(
  'a webhook secret',
  (u): u is string => typeof u === 'string' && secretProblem(u) === null,
  (u, context) => {
    if (typeof u !== 'string') return t.failure(u, context, 'must be a string');
    const problem = secretProblem(u);
    return problem === null ? t.success(u) : t.failure(u, context, problem);
  },
  t.identity,
);

/** secretProblem's bounds, for the document: it checks more (randomness, the `whsec_` form). */
const ChosenSecret = withSchema(ChosenSecretAlone, {
  type: 'string',
  minLength: 16,
  maxLength: 256,
  format: 'password',
});

export const CreateWebhookBody = strictObject(
  'a webhook subscription',
  {
    url: described(boundedString(1, 2048), { format: 'uri', examples: ['https://example.com/hooks'] }),
    events: EventTypeList,
  },
  {
    secret: described(ChosenSecret, {
      description:
        'Optional: the service generates one when it is left out (recommended). Either the Standard ' +
        'Webhooks form, `whsec_` and the base64 of 24 to 64 bytes (the key is the decoded bytes), or a plain ' +
        'secret of 16 to 256 characters (the key is its UTF-8 bytes). Either must look random: at least 8 ' +
        'different characters (or byte values), and no control characters. The answer shows it once, in ' +
        'the standard form.',
      examples: ['whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw'],
    }),
  },
);

export const TestEventBody = strictObject('a test event request', {}, { type: ListedEventType });

export const RotateSecretBody = strictObject(
  'a secret rotation',
  {},
  { secret: described(ChosenSecret, { description: 'As at creation; generated when left out' }) },
);

export const EnableBody = strictObject(
  'an enable request',
  {},
  { replayMissed: described(t.boolean, { default: false }) },
);

export const DeliveriesQuery = strictObject(
  'list parameters',
  {},
  {
    ...pageParams,
    status: paramOf(oneOf(['succeeded', 'failed'])),
    eventType: paramOf(EventTypeCodec),
    test: paramOf(oneOf(['true', 'false'])),
  },
);

/** At most this many failed deliveries go out again per replay: the answer says when more may be left. */
export const replayLimit = 500;

export const ReplayBody = strictObject('a replay request', {
  since: described(DateTimeString, {
    description: 'Deliveries whose last attempt failed at or after this time are sent again',
    examples: ['2026-05-01T00:00:00Z'],
  }),
});
