import * as t from 'io-ts';
import { boundedString, listOf, paramOf, refined, strictObject } from '../http/codec.js';
import { pageParams } from '../http/paging.js';
import { externalEventTypes } from './external.js';
import { secretProblem } from './secrets.js';

/**
 * The request bodies and query strings of the webhook routes (src/webhooks/api.ts), described in
 * src/webhooks/openapi.ts.
 */

const EventTypeCodec = refined(
  t.string,
  (s) => (externalEventTypes as readonly string[]).includes(s),
  `one of ${externalEventTypes.join(', ')}`,
);

/** A short string as JSON and a space, to name it in a message; nothing for any other value. */
const quoted = (u: unknown): string =>
  typeof u === 'string' && u.length <= 64 ? `${JSON.stringify(u)} ` : '';

/** An event type a subscription can list; an unknown one is named in the message as well as by its path. */
const ListedEventType = new t.Type<string, string, unknown>(
  EventTypeCodec.name,
  EventTypeCodec.is,
  (u, context) =>
    EventTypeCodec.is(u)
      ? t.success(u)
      : t.failure(u, context, `${quoted(u)}is not an event type: must be ${EventTypeCodec.name}`),
  t.identity,
);

/** Each external type at most once: a longer list is refused before any item is read. */
const EventTypeList = listOf(
  ListedEventType,
  { min: 1, max: externalEventTypes.length, distinct: true },
  'a non-empty list of distinct event types',
);

/** A secret a tenant chooses (secrets.ts): the standard's `whsec_` form, or a plain one. */
const ChosenSecret = new t.Type<string, string, unknown>(
  'a webhook secret',
  (u): u is string => typeof u === 'string' && secretProblem(u) === null,
  (u, context) => {
    if (typeof u !== 'string') return t.failure(u, context, 'must be a string');
    const problem = secretProblem(u);
    return problem === null ? t.success(u) : t.failure(u, context, problem);
  },
  t.identity,
);

export const CreateWebhookBody = strictObject(
  'a webhook subscription',
  { url: boundedString(1, 2048), events: EventTypeList },
  { secret: ChosenSecret },
);

export const TestEventBody = strictObject('a test event request', {}, { type: ListedEventType });

export const RotateSecretBody = strictObject('a secret rotation', {}, { secret: ChosenSecret });

export const EnableBody = strictObject('an enable request', {}, { replayMissed: t.boolean });

export const DeliveriesQuery = strictObject(
  'list parameters',
  {},
  {
    ...pageParams,
    status: paramOf(refined(t.string, (s) => s === 'succeeded' || s === 'failed', 'succeeded or failed')),
    eventType: paramOf(EventTypeCodec),
  },
);
