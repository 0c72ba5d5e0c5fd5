import * as t from 'io-ts';
import {
  boundedString,
  DateTimeString,
  numberBetween,
  PlainObject,
  refined,
  ResourceId,
  strictObject,
} from '../http/codec.js';
import type { BoundingBox } from '../readmodels/port.js';

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
  attributes: PlainObject,
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

/** Query strings arrive as text: these codecs parse it. */
const single = <A>(name: string, parse: (s: string) => A | undefined, message: string) =>
  new t.Type<A, A, unknown>(
    name,
    (_u): _u is A => false,
    (u, context) => {
      if (Array.isArray(u)) return t.failure(u, context, 'must be given once');
      const parsed = typeof u === 'string' ? parse(u) : undefined;
      return parsed === undefined ? t.failure(u, context, message) : t.success(parsed);
    },
    t.identity,
  );

const wholeNumber = (min: number, max: number) =>
  single(
    `a whole number from ${min} to ${max}`,
    (s) => (/^\d{1,15}$/.test(s) && Number(s) >= min && Number(s) <= max ? Number(s) : undefined),
    `must be a whole number from ${min} to ${max}`,
  );

const fromCodec = <A>(codec: t.Type<A, A, unknown>) =>
  single(
    codec.name,
    (s) => {
      const result = codec.decode(s);
      return result._tag === 'Right' ? result.right : undefined;
    },
    `must be ${codec.name}`,
  );

const parseBbox = (s: string): BoundingBox | undefined => {
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
    limit: wholeNumber(1, 200),
    cursor: single(
      'a cursor',
      (s) => (s.length > 0 && s.length <= 1024 ? s : undefined),
      'must be a cursor from nextCursor',
    ),
    minPosition: wholeNumber(0, Number.MAX_SAFE_INTEGER),
    observedFrom: fromCodec(DateTimeString),
    observedTo: fromCodec(DateTimeString),
    updatedSince: fromCodec(DateTimeString),
    locationId: fromCodec(ResourceId),
    visitId: fromCodec(ResourceId),
    bbox: single(
      'a bounding box',
      parseBbox,
      'must be minLon,minLat,maxLon,maxLat with longitudes in -180..180, latitudes in -90..90 and minLat <= maxLat',
    ),
    sort: fromCodec(
      refined(
        t.string,
        (s) => (sortOptions as readonly string[]).includes(s),
        `one of ${sortOptions.join(', ')}`,
      ),
    ),
  },
);

export type ListObservationsParams = t.TypeOf<typeof ListObservationsQuery>;
