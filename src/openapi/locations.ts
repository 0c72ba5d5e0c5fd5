import { mergePatchTypes } from '../http/body.js';
import { FreeJsonObject } from '../http/codec.js';
import {
  CreateLocationBody,
  ListLocationsQuery,
  locationSorts,
  PatchLocationBody,
} from '../locations/codecs.js';
import { CreateVisitBody, ListVisitsQuery, PatchVisitBody, visitSorts } from '../visits/codecs.js';
import { fields, page } from './components.js';
import { operation, type BuiltOperation } from './operation.js';
import {
  arrayOf,
  boundedFreeObject,
  dateTime,
  enumOf,
  freeObject,
  integer,
  nullable,
  number,
  object,
  ref,
  string,
  type Schema,
} from './schema.js';
import { pagingQuery } from './tenants.js';

/** Locations and field visits. */

const latLon = object(
  { lat: number(-90, 90), lon: number(-180, 180) },
  {},
  { description: 'A WGS 84 position' },
);

const lonLat: Schema = {
  type: 'array',
  prefixItems: [number(-180, 180), number(-90, 90)],
  items: false,
  minItems: 2,
  description: '`[lon, lat]`',
};

const polygon = object(
  {
    type: { type: 'string', const: 'Polygon' },
    coordinates: arrayOf(
      arrayOf(lonLat, {
        minItems: 4,
        description: 'A closed ring: the last position repeats the first',
        // Not JSON Schema, which cannot say it: test/support/schema-arbitrary.ts makes rings that close.
        'x-closed-ring': true,
      }),
      {
        minItems: 1,
        description: 'The outer ring, then any holes',
      },
    ),
  },
  { bbox: arrayOf({ type: 'number' }) },
  { description: 'A GeoJSON Polygon (RFC 7946 §3.1.6)' },
);

const locationFields: Record<string, Schema> = {
  name: string({ minLength: 1, maxLength: 200 }),
  position: ref('LatLon'),
  boundary: nullable(ref('Polygon')),
  attributes: boundedFreeObject(
    FreeJsonObject,
    'Free-form, at most 16 KiB once serialized; a patch merges it key by key',
  ),
};

const visitFields: Record<string, Schema> = {
  locationId: fields.resourceId,
  startedAt: dateTime(),
  endedAt: nullable(dateTime()),
  participants: arrayOf(string({ minLength: 1, maxLength: 200 }), { maxItems: 100 }),
  notes: nullable(string({ maxLength: 10_000 })),
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
  Visit: object(
    {
      id: fields.id('v'),
      tenantId: fields.tenantId,
      ...visitFields,
      status: enumOf(['draft', 'submitted']),
      observationIds: arrayOf(string(), {
        description: 'The observations of the visit, recorded when it is submitted',
      }),
      submittedAt: nullable(dateTime()),
      createdAt: dateTime(),
      updatedAt: dateTime(),
      version: fields.version,
    },
    {},
    { description: 'A field visit to a location' },
  ),
};

const minPosition = {
  schema: integer(0, Number.MAX_SAFE_INTEGER),
  description: 'Wait until the list includes the write with this X-Position',
};

/** GET of one location or visit, and the description of its id. */
const readOne = ({
  path,
  one,
  schema,
  tag,
  read,
}: {
  path: string;
  one: string;
  schema: string;
  tag: string;
  read: 'locations:read' | 'observations:read';
}) => {
  const byId = { id: { description: `The ${one}'s id`, schema: string() } };
  return {
    byId,
    get: operation({
      method: 'get',
      path: `${path}/:id`,
      operationId: `get${schema}`,
      summary: `Read a ${one}`,
      tag,
      access: { scope: read },
      pathParameters: byId,
      headers: ['IfNoneMatch'],
      responses: {
        '200': { description: `The ${one}`, headers: ['ETag'], content: { 'application/json': ref(schema) } },
        '304': { description: 'Not modified', headers: ['ETag'] },
      },
    }),
  };
};

const locations = '/v1/tenants/:tenantId/locations';
const visits = '/v1/tenants/:tenantId/visits';

export const locationOperations = (): BuiltOperation[] => {
  const location = readOne({
    path: locations,
    one: 'location',
    schema: 'Location',
    tag: 'Locations',
    read: 'locations:read',
  });
  const visit = readOne({
    path: visits,
    one: 'visit',
    schema: 'Visit',
    tag: 'Visits',
    read: 'observations:read',
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
          minPosition,
          bbox: {
            schema: string({
              pattern: '^-?\\d+(\\.\\d+)?,-?\\d+(\\.\\d+)?,-?\\d+(\\.\\d+)?,-?\\d+(\\.\\d+)?$',
              examples: ['6.5,44.9,7.5,45.5'],
            }),
            description: '`minLon,minLat,maxLon,maxLat`: locations whose position is inside',
          },
          namePrefix: {
            schema: string({ minLength: 1, maxLength: 200 }),
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
    operation({
      method: 'post',
      path: visits,
      operationId: 'createVisit',
      summary: 'Start a visit',
      description: '`locationId` must name a location of the tenant (422 otherwise).',
      tag: 'Visits',
      access: { scope: 'observations:write' },
      body: {
        codec: CreateVisitBody,
        name: 'CreateVisitRequest',
        properties: visitFields,
        mediaTypes: ['application/json'],
        json: true,
      },
      responses: {
        '201': {
          description: 'Created',
          headers: ['Location', 'ETag', 'X-Position'],
          content: { 'application/json': ref('Visit') },
        },
      },
      problems: ['422'],
    }),
    operation({
      method: 'get',
      path: visits,
      operationId: 'listVisits',
      summary: 'List visits',
      tag: 'Visits',
      access: { scope: 'observations:read' },
      query: {
        codec: ListVisitsQuery,
        parameters: {
          ...pagingQuery.parameters,
          minPosition,
          locationId: { schema: fields.resourceId, description: 'Only visits to this location' },
          status: { schema: enumOf(['draft', 'submitted']), description: 'Only visits in this state' },
          startedFrom: { schema: dateTime(), description: '`startedAt` at or after' },
          startedTo: { schema: dateTime(), description: '`startedAt` at or before' },
          sort: { schema: enumOf(visitSorts), description: 'Order' },
        },
      },
      responses: {
        '200': {
          description: 'A page',
          content: { 'application/json': page(ref('Visit'), 'A page of visits') },
        },
      },
      problems: ['503'],
    }),
    visit.get,
    operation({
      method: 'patch',
      path: `${visits}/:id`,
      operationId: 'updateVisit',
      summary: 'Change a draft visit',
      description: 'A JSON Merge Patch (RFC 7396). A submitted visit no longer changes (409).',
      tag: 'Visits',
      access: { scope: 'observations:write' },
      pathParameters: visit.byId,
      headers: ['IfMatch'],
      body: {
        codec: PatchVisitBody,
        name: 'VisitPatch',
        properties: visitFields,
        mediaTypes: [...mergePatchTypes],
        json: true,
      },
      responses: {
        '200': {
          description: 'The visit',
          headers: ['ETag', 'X-Position'],
          content: { 'application/json': ref('Visit') },
        },
      },
      problems: ['412', '422'],
    }),
    operation({
      method: 'post',
      path: `${visits}/:id/submit`,
      operationId: 'submitVisit',
      summary: 'Submit a visit',
      description: 'Records the observations that name the visit, and sends `visit.submitted`.',
      tag: 'Visits',
      access: { scope: 'observations:write' },
      pathParameters: visit.byId,
      headers: ['IfMatch'],
      responses: {
        '200': {
          description: 'Submitted',
          headers: ['ETag', 'X-Position'],
          content: { 'application/json': ref('Visit') },
        },
      },
      problems: ['412', '503'],
    }),
  ];
};
