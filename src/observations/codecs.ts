import * as t from 'io-ts';
import { pageParams } from '../http/paging.js';
import {
  absentAs,
  absentValues,
  component,
  described,
  paramOf,
  plainText,
  singleParam,
  wholeNumberParam,
  DateTimeString,
  numberBetween,
  FreeJsonObject,
  oneOf,
  refined,
  ResourceId,
  strictObject,
} from '../http/codec.js';
import { ServiceId, Sha256Hex, StreamVersion, TenantIdString, WholeNumber } from '../http/resource-fields.js';
import type { BoundingBox } from '../readmodels/port.js';

/**
 * An observation's fields, each declared once: the codec decodes the bodies that set it, types the
 * resource, and describes it in the API's document (request bodies, the resource, the webhook events).
 */

const nullable = <A>(codec: t.Type<A, A, unknown>) => t.union([codec, t.null]);

export const GeoPositionCodec = component(
  'GeoPosition',
  described(
    strictObject(
      'a position',
      { lat: numberBetween(-90, 90, 'a latitude'), lon: numberBetween(-180, 180, 'a longitude') },
      {
        accuracyM: described(numberBetween(0, 1_000_000, 'an accuracy in metres'), {
          description: 'Accuracy in metres',
        }),
      },
    ),
    { description: 'A WGS 84 position' },
  ),
);

/** The fields a client may leave out of a creation, each with the value recorded when it does. */
const optionalFields = {
  position: absentAs(nullable(GeoPositionCodec), null),
  locationId: absentAs(nullable(ResourceId), null),
  visitId: absentAs(nullable(ResourceId), null),
  notes: absentAs(nullable(plainText(0, 10_000)), null),
  attributes: absentAs(
    described(FreeJsonObject, {
      description: 'Free-form, at most 16 KiB once serialized; a patch merges it key by key',
    }),
    {},
  ),
};

/** Every field a client sets: those of a creation, a patch, and the data of the webhook events. */
export const observationFields = {
  observedAt: described(DateTimeString, {
    description: 'When it was observed: ISO 8601 with a time zone, returned in UTC',
  }),
  ...optionalFields,
};

export const CreateObservationBody = strictObject(
  'an observation',
  { observedAt: observationFields.observedAt },
  optionalFields,
);

export const PatchObservationBody = strictObject('an observation patch', {}, observationFields);

/** The fields a client sets. Optional ones are recorded as their `absentAs` value when absent. */
export type ObservationFields = t.TypeOf<t.TypeC<typeof observationFields>>;

/** What a creation records for each field the body leaves out, as the fields declare it. */
const absentFields = absentValues(optionalFields);

/** The fields a creation records: the body's, and the defaults for those it leaves out. */
export const recordedFields = (body: t.TypeOf<typeof CreateObservationBody>): ObservationFields => ({
  ...absentFields,
  ...body,
});

/**
 * The fields of the observation the examples show: the document's resource and the webhooks' test event.
 * A field added later joins them with its value when absent, as a creation records it.
 */
const { observedAt: exampleTime, ...exampleRest } = recordedFields({
  observedAt: '2026-05-01T07:30:00.000Z',
  position: { lat: 45.1, lon: 7.2, accuracyM: 5 },
  notes: 'near the creek',
  attributes: { species: 'fox', count: 2 },
});
// observedAt first, as a reader expects it.
export const exampleObservationFields: ObservationFields = { observedAt: exampleTime, ...exampleRest };

/** The image types the service stores: the type is read from the bytes (src/media/header.ts). */
export const mediaContentTypes = ['image/jpeg', 'image/png', 'image/webp'] as const;

const MediaContentTypeCodec = t.keyof(
  Object.fromEntries(mediaContentTypes.map((type) => [type, null])) as Record<
    (typeof mediaContentTypes)[number],
    null
  >,
);

export const ObservationMediaCodec = component(
  'Media',
  described(
    strictObject('a medium', {
      id: described(
        refined(t.string, (s) => /^m_[0-9a-f]{26}$/.test(s), 'a media id', { pattern: '^m_[0-9a-f]{26}$' }),
        {
          description: '`m_` and the first 26 hex digits of the SHA-256',
        },
      ),
      sha256: Sha256Hex,
      contentType: MediaContentTypeCodec,
      size: WholeNumber(1, { description: 'Bytes' }),
      width: WholeNumber(1),
      height: WholeNumber(1),
      addedAt: DateTimeString,
    }),
    { description: 'An image attached to an observation' },
  ),
);

/**
 * What the latest CV job that found something saw, counted by label: set by the service on the list's
 * documents only (projections/observations.ts folds it from CvJobCompleted), so a list page says what was
 * seen without a request per row. A single read, folded from the observation's own stream, leaves it out.
 */
export const LatestDetectionsCodec = component(
  'LatestDetections',
  described(
    strictObject('the latest detections', {
      jobId: ResourceId,
      model: plainText(1, 200),
      finishedAt: DateTimeString,
      labels: described(
        t.array(strictObject('a label count', { label: plainText(1, 200), count: WholeNumber(1) })),
        { description: 'Each label with how many times it was detected, most first' },
      ),
    }),
    {
      description:
        'In lists only: the labels of the latest completed CV job of this observation that detected something',
    },
  ),
);

/** The resource as clients see it, and the document the observations read model stores. */
export const ObservationCodec = component(
  'Observation',
  described(
    strictObject(
      'an observation',
      {
        id: ServiceId('o'),
        tenantId: TenantIdString,
        ...observationFields,
        media: described(t.array(ObservationMediaCodec), { description: 'In the order they were added' }),
        createdAt: DateTimeString,
        updatedAt: DateTimeString,
        version: StreamVersion,
      },
      { latestDetections: LatestDetectionsCodec },
    ),
    { description: 'A field observation' },
  ),
);

export const parseBbox = (s: string): BoundingBox | undefined => {
  const parts = s.split(',');
  if (parts.length !== 4 || parts.some((p) => !/^-?\d+(\.\d+)?$/.test(p.trim()))) return undefined;
  const [minLon, minLat, maxLon, maxLat] = parts.map(Number) as [number, number, number, number];
  const lonOk = [minLon, maxLon].every((lon) => lon >= -180 && lon <= 180);
  const latOk = [minLat, maxLat].every((lat) => lat >= -90 && lat <= 90) && minLat <= maxLat;
  return lonOk && latOk ? { minLon, minLat, maxLon, maxLat } : undefined;
};

export const sortOptions = [
  'observedAt',
  '-observedAt',
  'updatedAt',
  '-updatedAt',
  'createdAt',
  '-createdAt',
] as const;

export const ListObservationsQuery = strictObject(
  'list parameters',
  {},
  {
    ...pageParams,
    minPosition: wholeNumberParam(0, Number.MAX_SAFE_INTEGER),
    observedFrom: paramOf(DateTimeString),
    observedTo: paramOf(DateTimeString),
    updatedSince: paramOf(DateTimeString),
    locationId: paramOf(ResourceId),
    visitId: paramOf(ResourceId),
    bbox: singleParam(
      'a bounding box',
      parseBbox,
      'must be minLon,minLat,maxLon,maxLat with longitudes in -180..180, latitudes in -90..90 and minLat <= maxLat',
    ),
    sort: paramOf(oneOf(sortOptions)),
  },
);

export type ListObservationsParams = t.TypeOf<typeof ListObservationsQuery>;
