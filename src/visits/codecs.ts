import * as t from 'io-ts';
import {
  boundedString,
  DateTimeString,
  paramOf,
  listOf,
  refined,
  ResourceId,
  strictObject,
  wholeNumberParam,
} from '../http/codec.js';
import { pageParams } from '../http/paging.js';

const nullable = <A>(codec: t.Type<A, A, unknown>) => t.union([codec, t.null]);

const Participants = listOf(
  boundedString(1, 200),
  { min: 0, max: 100 },
  'a list of at most 100 participant names',
);

const optional = {
  endedAt: nullable(DateTimeString),
  participants: Participants,
  notes: nullable(boundedString(0, 10_000)),
};

export const CreateVisitBody = strictObject(
  'a visit',
  { locationId: ResourceId, startedAt: DateTimeString },
  optional,
);

export const PatchVisitBody = strictObject(
  'a visit patch',
  {},
  { locationId: ResourceId, startedAt: DateTimeString, ...optional },
);

export const visitSorts = ['startedAt', '-startedAt', 'createdAt', '-createdAt'] as const;

export const ListVisitsQuery = strictObject(
  'list parameters',
  {},
  {
    ...pageParams,
    minPosition: wholeNumberParam(0, Number.MAX_SAFE_INTEGER),
    locationId: paramOf(ResourceId),
    status: paramOf(refined(t.string, (s) => s === 'draft' || s === 'submitted', 'draft or submitted')),
    startedFrom: paramOf(DateTimeString),
    startedTo: paramOf(DateTimeString),
    sort: paramOf(
      refined(
        t.string,
        (s) => (visitSorts as readonly string[]).includes(s),
        `one of ${visitSorts.join(', ')}`,
      ),
    ),
  },
);
