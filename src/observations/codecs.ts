import * as t from 'io-ts';
import { pageParams } from '../http/paging.js';
import {
  boundedString,
  paramOf,
  singleParam,
  wholeNumberParam,
  DateTimeString,
  numberBetween,
  FreeJsonObject,
  refined,
  ResourceId,
  strictObject,
} from '../http/codec.js';
import type { BoundingBox } from '../readmodels/port.js';
import type { ObservationFields } from './observation.js';

const nullable = <A>(codec: t.Type<A, A, unknown>) => t.union([codec, t.null]);

export const GeoPositionCodec = strictObject(
  'a position',
  { lat: numberBetween(-90, 90, 'a latitude'), lon: numberBetween(-180, 180, 'a longitude') },
  { accuracyM: numberBetween(0, 1_000_000, 'an accuracy in metres') },
);

const optionalFields = {
  position: nullable(GeoPositionCodec),
  locationId: nullable(ResourceId),
  visitId: nullable(ResourceId),
  notes: nullable(boundedString(0, 10_000)),
  attributes: FreeJsonObject,
};

export const CreateObservationBody = strictObject(
  'an observation',
  { observedAt: DateTimeString },
  optionalFields,
);

export const PatchObservationBody = strictObject(
  'an observation patch',
  {},
  { observedAt: DateTimeString, ...optionalFields },
);

/** What a creation records for a field the body leaves out; the type makes a new field name its own. */
const absentFields = {
  position: null,
  locationId: null,
  visitId: null,
  notes: null,
  attributes: {},
} satisfies Omit<ObservationFields, 'observedAt'>;

/** The fields a creation records: the body's, and the defaults for those it leaves out. */
export const recordedFields = (body: t.TypeOf<typeof CreateObservationBody>): ObservationFields => ({
  ...absentFields,
  ...body,
});

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
    sort: paramOf(
      refined(
        t.string,
        (s) => (sortOptions as readonly string[]).includes(s),
        `one of ${sortOptions.join(', ')}`,
      ),
    ),
  },
);

export type ListObservationsParams = t.TypeOf<typeof ListObservationsQuery>;
