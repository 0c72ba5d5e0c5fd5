import * as t from 'io-ts';
import {
  component,
  described,
  DateTimeString,
  plainText,
  paramOf,
  listOf,
  oneOf,
  ResourceId,
  strictObject,
  wholeNumberParam,
} from '../http/codec.js';
import { pageParams } from '../http/paging.js';
import { ServiceId, StreamVersion, TenantIdString, typesAgree } from '../http/resource-fields.js';
import type { Visit } from './decider.js';

/**
 * A visit's fields, each declared once: the codecs decode the bodies, and the API's document derives the
 * schemas of the bodies and of the resource from them (src/openapi/schema.ts).
 */

const nullable = <A>(codec: t.Type<A, A, unknown>) => t.union([codec, t.null]);

const Participants = listOf(
  plainText(1, 200),
  { min: 0, max: 100 },
  'a list of at most 100 participant names',
);

const optional = {
  endedAt: nullable(DateTimeString),
  participants: Participants,
  notes: nullable(plainText(0, 10_000)),
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

export const visitStatuses = ['draft', 'submitted'] as const;

/** The resource as clients read it. */
export const VisitCodec = component(
  'Visit',
  described(
    strictObject('a visit', {
      id: ServiceId('v'),
      tenantId: TenantIdString,
      locationId: ResourceId,
      startedAt: DateTimeString,
      ...optional,
      status: oneOf(visitStatuses),
      observationIds: described(t.array(t.string), {
        description: 'The observations of the visit, recorded when it is submitted',
      }),
      submittedAt: nullable(DateTimeString),
      createdAt: DateTimeString,
      updatedAt: DateTimeString,
      version: StreamVersion,
    }),
    { description: 'A field visit to a location' },
  ),
);

typesAgree<Visit, t.TypeOf<typeof VisitCodec>>(true);

export const visitSorts = ['startedAt', '-startedAt', 'createdAt', '-createdAt'] as const;

export const ListVisitsQuery = strictObject(
  'list parameters',
  {},
  {
    ...pageParams,
    minPosition: wholeNumberParam(0, Number.MAX_SAFE_INTEGER),
    locationId: paramOf(ResourceId),
    status: paramOf(oneOf(visitStatuses)),
    startedFrom: paramOf(DateTimeString),
    startedTo: paramOf(DateTimeString),
    sort: paramOf(oneOf(visitSorts)),
  },
);
