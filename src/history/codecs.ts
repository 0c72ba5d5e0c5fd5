import * as t from 'io-ts';
import { parseStreamName } from '../core/streams.js';
import {
  DateTimeString,
  oneOf,
  paramOf,
  singleParam,
  strictObject,
  wholeNumberParam,
} from '../http/codec.js';
import { pageParams } from '../http/paging.js';

/** The most events one JSON page holds; an NDJSON download has no such bound. */
export const maxPageLimit = 1000;
export const defaultPageLimit = 100;

const eventTypeName = /^[A-Za-z][A-Za-z0-9._-]{0,99}$/;
const maxEventTypes = 100;

/**
 * `type`: event type names, repeated (`type=A&type=B`) or comma-separated (`type=A,B`), or both.
 * Decodes to the sorted distinct names, so the same set in another order is the same query (and cursor).
 */
export const EventTypesParam = new t.Type<string[], string[], unknown>(
  'event type names',
  (u): u is string[] => Array.isArray(u) && u.every((s) => typeof s === 'string'),
  (u, context) => {
    const given = typeof u === 'string' ? [u] : u;
    if (!Array.isArray(given) || !given.every((s): s is string => typeof s === 'string'))
      return t.failure(u, context, 'must be event type names');
    const names = given.flatMap((s) => s.split(',')).map((s) => s.trim());
    if (!names.every((name) => eventTypeName.test(name)))
      return t.failure(u, context, 'must be event type names such as ObservationRecorded, comma-separated');
    const distinct = [...new Set(names)].sort();
    return distinct.length > maxEventTypes
      ? t.failure(u, context, `must name at most ${maxEventTypes} event types`)
      : t.success(distinct);
  },
  t.identity,
);

export const StreamNameParam = singleParam(
  'a stream name',
  (s) => (s.length <= 300 && parseStreamName(s) ? s : undefined),
  'must be a stream name such as observation-<tenantId>_<id>',
);

/** Commit order (the default, and the only order of an NDJSON download), or newest first. */
export const historyOrders = ['asc', 'desc'] as const;

export const EventHistoryQuery = strictObject(
  'history parameters',
  {},
  {
    type: EventTypesParam,
    stream: StreamNameParam,
    from: paramOf(DateTimeString),
    to: paramOf(DateTimeString),
    after: wholeNumberParam(0, Number.MAX_SAFE_INTEGER),
    // Up to maxPageLimit for a JSON page; for an NDJSON download, a cap on the lines (checked in the route).
    limit: wholeNumberParam(1, Number.MAX_SAFE_INTEGER),
    cursor: pageParams.cursor,
    order: paramOf(oneOf(historyOrders)),
  },
);

export type EventHistoryParams = t.TypeOf<typeof EventHistoryQuery>;
