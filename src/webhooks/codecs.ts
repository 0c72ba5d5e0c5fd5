import * as t from 'io-ts';
import { boundedString, paramOf, refined, strictObject } from '../http/codec.js';
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

/** An event type a subscription can list; an unknown one is named in the message as well as by its path. */
const ListedEventType = new t.Type<string, string, unknown>(
  EventTypeCodec.name,
  EventTypeCodec.is,
  (u, context) =>
    EventTypeCodec.is(u)
      ? t.success(u)
      : t.failure(u, context, `${JSON.stringify(u)} is not an event type: must be ${EventTypeCodec.name}`),
  t.identity,
);

const listExpectation = 'a non-empty list of distinct event types';

/**
 * The element errors pass through with their index (`events.1`), so a client learns which type is unknown;
 * `refined` over the array would have replaced them with one error on the whole list.
 */
const EventTypeList = new t.Type<string[], string[], unknown>(
  listExpectation,
  (u): u is string[] => t.array(ListedEventType).is(u) && u.length > 0 && new Set(u).size === u.length,
  (u, context) => {
    if (!Array.isArray(u)) return t.failure(u, context, `must be ${listExpectation}`);
    const result = t.array(ListedEventType).validate(u, context);
    if (result._tag === 'Left') return result;
    return result.right.length > 0 && new Set(result.right).size === result.right.length
      ? result
      : t.failure(u, context, `must be ${listExpectation}`);
  },
  t.identity,
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
