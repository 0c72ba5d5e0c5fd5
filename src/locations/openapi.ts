import { mergePatchTypes } from '../http/body.js';
import { FreeJsonObject } from '../http/codec.js';
import { CreateLocationBody, ListLocationsQuery, locationSorts, PatchLocationBody } from './codecs.js';
import { exampleIds, fields, page } from '../openapi/components.js';
import { operation, type BuiltOperation } from '../openapi/operation.js';
import {
  arrayOf,
  boundedFreeObject,
  dateTime,
  enumOf,
  freeObject,
  nullable,
  number,
  object,
  ref,
  string,
  type Schema,
} from '../openapi/schema.js';
import { minPositionQuery, pagingQuery, readOne } from '../openapi/resource.js';

/** Locations: their schemas and operations. */

const latLon = object(
  { lat: number(-90, 90), lon: number(-180, 180) },
  {},
  { description: 'A WGS 84 position' },
);

const lonLat: Schema = {
  type: 'array',
  prefixItems: [number(-180, 180), number(-90, 90)],
  // Exactly the two of prefixItems: `items` never applies.
  items: { type: 'number' },
  minItems: 2,
  maxItems: 2,
  description: '`[lon, lat]`',
};

const polygon = object(
  {
    type: { type: 'string', const: 'Polygon' },
    coordinates: arrayOf(
      arrayOf(lonLat, {
        minItems: 4,
        // What a 1 MB body (BODY_LIMIT) can hold at 6 bytes a position; the codec counts no further.
        maxItems: 175_000,
        description: 'A closed ring: the last position repeats the first',
        // Not JSON Schema, which cannot say it: test/support/schema-arbitrary.ts makes rings that close.
        'x-closed-ring': true,
      }),
      {
        minItems: 1,
        maxItems: 44_000,
        description: 'The outer ring, then any holes',
      },
    ),
  },
  { bbox: arrayOf({ type: 'number' }, { minItems: 4, maxItems: 6 }) },
  { description: 'A GeoJSON Polygon (RFC 7946 §3.1.6)' },
);

const locationFields: Record<string, Schema> = {
  name: fields.text(200, 1),
  position: ref('LatLon'),
  boundary: nullable(ref('Polygon')),
  attributes: boundedFreeObject(
    FreeJsonObject,
    'Free-form, at most 16 KiB once serialized; a patch merges it key by key',
  ),
};

export const locationSchemas: Record<string, Schema> = {
  LatLon: latLon,
  Polygon: polygon,
  Location: object(
    {
      id: fields.id('l'),
      tenantId: fields.tenantId,
      name: string({ minLength: 1, maxLength: 200 }),
      position: ref('LatLon'),
      boundary: nullable(ref('Polygon')),
      attributes: freeObject('Free-form'),
      createdAt: dateTime(),
      updatedAt: dateTime(),
      version: fields.version,
    },
    {},
    { description: 'A named place where observations are made' },
  ),
};

const locations = '/v1/tenants/:tenantId/locations';

export const locationOperations = (): BuiltOperation[] => {
  const location = readOne({
    path: locations,
    one: 'location',
    schema: 'Location',
    tag: 'Locations',
    read: 'locations:read',
    example: exampleIds.location,
  });
  return [
    operation({
      method: 'post',
      path: locations,
      operationId: 'createLocation',
      summary: 'Create a location',
      tag: 'Locations',
      access: { scope: 'locations:write' },
      body: {
        codec: CreateLocationBody,
        name: 'CreateLocationRequest',
        properties: locationFields,
        mediaTypes: ['application/json'],
        json: true,
        example: {
          name: 'Creek meadow',
          position: { lat: 45.1, lon: 7.2 },
          boundary: {
            type: 'Polygon',
            coordinates: [
              [
                [7.1, 45.0],
                [7.3, 45.0],
                [7.3, 45.2],
                [7.1, 45.0],
              ],
            ],
          },
          attributes: { habitat: 'wet meadow' },
        },
      },
      responses: {
        '201': {
          description: 'Created',
          headers: ['Location', 'ETag', 'X-Position'],
          content: { 'application/json': ref('Location') },
        },
      },
    }),
    operation({
      method: 'get',
      path: locations,
      operationId: 'listLocations',
      summary: 'List locations',
      tag: 'Locations',
      access: { scope: 'locations:read' },
      query: {
        codec: ListLocationsQuery,
        parameters: {
          ...pagingQuery.parameters,
          minPosition: minPositionQuery,
          bbox: {
            schema: string({
              maxLength: 200,
              pattern: '^-?\\d+(\\.\\d+)?,-?\\d+(\\.\\d+)?,-?\\d+(\\.\\d+)?,-?\\d+(\\.\\d+)?$',
              examples: ['6.5,44.9,7.5,45.5'],
            }),
            description: '`minLon,minLat,maxLon,maxLat`: locations whose position is inside',
          },
          namePrefix: {
            schema: fields.text(200, 1),
            description: 'Names that start with it',
          },
          sort: { schema: enumOf(locationSorts), description: 'Order' },
        },
      },
      responses: {
        '200': {
          description: 'A page',
          content: { 'application/json': page(ref('Location'), 'A page of locations') },
        },
      },
      problems: ['503'],
    }),
    location.get,
    operation({
      method: 'patch',
      path: `${locations}/:id`,
      operationId: 'updateLocation',
      summary: 'Change a location',
      description: 'A JSON Merge Patch (RFC 7396); `attributes` merge key by key.',
      tag: 'Locations',
      access: { scope: 'locations:write' },
      pathParameters: location.byId,
      headers: ['IfMatch'],
      body: {
        codec: PatchLocationBody,
        name: 'LocationPatch',
        properties: locationFields,
        mediaTypes: [...mergePatchTypes],
        json: true,
        example: { attributes: { access: 'footpath from the north gate' } },
      },
      responses: {
        '200': {
          description: 'The location',
          headers: ['ETag', 'X-Position'],
          content: { 'application/json': ref('Location') },
        },
      },
      problems: ['412'],
    }),
    operation({
      method: 'delete',
      path: `${locations}/:id`,
      operationId: 'deleteLocation',
      summary: 'Delete a location',
      tag: 'Locations',
      access: { scope: 'locations:write' },
      pathParameters: location.byId,
      headers: ['IfMatch'],
      responses: { '204': { description: 'Deleted', headers: ['X-Position'] } },
      problems: ['412'],
    }),
  ];
};
