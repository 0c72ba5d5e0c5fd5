import { isLeft } from 'fp-ts/lib/Either.js';
import * as t from 'io-ts';
import {
  boundedString,
  numberBetween,
  paramOf,
  FreeJsonObject,
  refined,
  singleParam,
  strictObject,
  wholeNumberParam,
} from '../http/codec.js';
import { pageParams } from '../http/paging.js';
import { parseBbox } from '../observations/codecs.js';
import type { Polygon } from './decider.js';

const LatLon = strictObject('a position', {
  lat: numberBetween(-90, 90, 'a latitude'),
  lon: numberBetween(-180, 180, 'a longitude'),
});

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
export const PolygonCodec = new t.Type<Polygon, Polygon, unknown>(
  'a GeoJSON Polygon',
  (u): u is Polygon => !isLeft(PolygonCodec.validate(u, [])),
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

const fields = {
  boundary: t.union([PolygonCodec, t.null]),
  attributes: FreeJsonObject,
};

export const CreateLocationBody = strictObject(
  'a location',
  { name: boundedString(1, 200), position: LatLon },
  fields,
);

export const PatchLocationBody = strictObject(
  'a location patch',
  {},
  { name: boundedString(1, 200), position: LatLon, ...fields },
);

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
    namePrefix: paramOf(boundedString(1, 200)),
    sort: paramOf(
      refined(
        t.string,
        (s) => (locationSorts as readonly string[]).includes(s),
        `one of ${locationSorts.join(', ')}`,
      ),
    ),
  },
);
