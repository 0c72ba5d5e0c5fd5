import { isLeft } from 'fp-ts/lib/Either.js';
import * as t from 'io-ts';
import {
  absentAs,
  component,
  DateTimeString,
  described,
  numberBetween,
  paramOf,
  plainText,
  FreeJsonObject,
  oneOf,
  singleParam,
  strictObject,
  wholeNumberParam,
  withSchema,
} from '../http/codec.js';
import { pageParams } from '../http/paging.js';
import { ServiceId, StreamVersion, TenantIdString, typesAgree } from '../http/resource-fields.js';
import { parseBbox } from '../observations/codecs.js';
import type { Location, Polygon } from './decider.js';

/**
 * A location's fields, each declared once: the codecs decode the bodies, and the API's document derives
 * the schemas of the bodies and of the resource from them (src/openapi/schema.ts).
 */

export const LatLon = component(
  'LatLon',
  described(
    strictObject('a position', {
      lat: numberBetween(-90, 90, 'a latitude'),
      lon: numberBetween(-180, 180, 'a longitude'),
    }),
    { description: 'A WGS 84 position' },
  ),
);

const isPosition = (p: unknown): p is [number, number] =>
  Array.isArray(p) &&
  p.length === 2 &&
  typeof p[0] === 'number' &&
  typeof p[1] === 'number' &&
  Math.abs(p[0]) <= 180 &&
  Math.abs(p[1]) <= 90;

/**
 * A GeoJSON Polygon: `{type: "Polygon", coordinates: [ring, ...holes]}`, each ring a closed list of at
 * least 4 `[lon, lat]` positions whose first and last are the same.
 */
const PolygonCodecAlone = new t.Type<Polygon, Polygon, unknown>(
  'a GeoJSON Polygon',
  (u): u is Polygon => !isLeft(PolygonCodecAlone.validate(u, [])),
  (u, context) => {
    const value = u as { type?: unknown; coordinates?: unknown };
    if (
      typeof u !== 'object' ||
      u === null ||
      value.type !== 'Polygon' ||
      !Array.isArray(value.coordinates)
    ) {
      return t.failure(
        u,
        context,
        'must be a GeoJSON Polygon: {"type": "Polygon", "coordinates": [[[lon, lat], ...]]}',
      );
    }
    const extra = Object.keys(u).filter((key) => key !== 'type' && key !== 'coordinates' && key !== 'bbox');
    if (extra.length > 0)
      return t.failure(
        u,
        [...context, { key: extra[0]!, type: t.unknown, actual: undefined }],
        'is not a known field',
      );
    if (value.coordinates.length === 0) return t.failure(u, context, 'must have an outer ring');
    for (const [index, ring] of (value.coordinates as unknown[]).entries()) {
      const at = [
        ...context,
        { key: 'coordinates', type: t.unknown, actual: value.coordinates },
        { key: String(index), type: t.unknown, actual: ring },
      ];
      if (!Array.isArray(ring) || ring.length < 4 || !ring.every(isPosition)) {
        return t.failure(ring, at, 'must be a ring of at least 4 [lon, lat] positions');
      }
      const [first, last] = [ring[0] as [number, number], ring[ring.length - 1] as [number, number]];
      if (first[0] !== last[0] || first[1] !== last[1])
        return t.failure(ring, at, 'must be closed: its last position must equal its first');
    }
    return t.success(u as Polygon);
  },
  t.identity,
);

const lonLat = {
  type: 'array',
  prefixItems: [
    { type: 'number', minimum: -180, maximum: 180 },
    { type: 'number', minimum: -90, maximum: 90 },
  ],
  // Exactly the two of prefixItems: `items` never applies.
  items: { type: 'number' },
  minItems: 2,
  maxItems: 2,
  description: '`[lon, lat]`',
};

/** What PolygonCodec checks, as JSON Schema: the codec is written by hand, so is its schema. */
export const PolygonCodec = component(
  'Polygon',
  withSchema(PolygonCodecAlone, {
    type: 'object',
    required: ['type', 'coordinates'],
    properties: {
      type: { type: 'string', const: 'Polygon' },
      coordinates: {
        type: 'array',
        items: {
          type: 'array',
          items: lonLat,
          minItems: 4,
          // What a 1 MB body (BODY_LIMIT) can hold at 6 bytes a position; the codec counts no further.
          maxItems: 175_000,
          description: 'A closed ring: the last position repeats the first',
          // Not JSON Schema, which cannot say it: test/support/schema-arbitrary.ts makes rings that close.
          'x-closed-ring': true,
        },
        minItems: 1,
        maxItems: 44_000,
        description: 'The outer ring, then any holes',
      },
      bbox: { type: 'array', items: { type: 'number' }, minItems: 4, maxItems: 6 },
    },
    additionalProperties: false,
    description: 'A GeoJSON Polygon (RFC 7946 §3.1.6)',
  }),
);

const name = plainText(1, 200);

const optionalFields = {
  boundary: absentAs(t.union([PolygonCodec, t.null]), null),
  attributes: absentAs(
    described(FreeJsonObject, {
      description: 'Free-form, at most 16 KiB once serialized; a patch merges it key by key',
    }),
    {},
  ),
};

export const CreateLocationBody = strictObject('a location', { name, position: LatLon }, optionalFields);

export const PatchLocationBody = strictObject(
  'a location patch',
  {},
  { name, position: LatLon, ...optionalFields },
);

/** The resource as clients read it. */
export const LocationCodec = component(
  'Location',
  described(
    strictObject('a location', {
      id: ServiceId('l'),
      tenantId: TenantIdString,
      name,
      position: LatLon,
      ...optionalFields,
      createdAt: DateTimeString,
      updatedAt: DateTimeString,
      version: StreamVersion,
    }),
    { description: 'A named place where observations are made' },
  ),
);

typesAgree<Location, t.TypeOf<typeof LocationCodec>>(true);

export const locationSorts = ['name', '-name', 'createdAt', '-createdAt', 'updatedAt', '-updatedAt'] as const;

export const ListLocationsQuery = strictObject(
  'list parameters',
  {},
  {
    ...pageParams,
    minPosition: wholeNumberParam(0, Number.MAX_SAFE_INTEGER),
    bbox: singleParam(
      'a bounding box',
      parseBbox,
      'must be minLon,minLat,maxLon,maxLat with minLat <= maxLat',
    ),
    namePrefix: paramOf(name),
    sort: paramOf(oneOf(locationSorts)),
  },
);
