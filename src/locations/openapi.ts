import { mergePatchTypes } from '../http/body.js';
import {
  CreateLocationBody,
  LatLon,
  ListLocationsQuery,
  LocationCodec,
  PatchLocationBody,
  PolygonCodec,
} from './codecs.js';
import { exampleIds } from '../openapi/components.js';
import { operation, type BuiltOperation } from '../openapi/operation.js';
import { componentSchemas, string, type Schema } from '../openapi/schema.js';
import {
  changedResponse,
  createdResponse,
  minPositionQuery,
  pageResponse,
  pagingQuery,
  readOne,
} from '../openapi/resource.js';

/** Locations: their operations. Their schemas are derived from the codecs (./codecs.ts). */

export const locationSchemas: Record<string, Schema> = componentSchemas([
  LatLon,
  PolygonCodec,
  LocationCodec,
]);

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
        '201': createdResponse('Location', 'Created'),
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
          namePrefix: { description: 'Names that start with it' },
          sort: { description: 'Order' },
        },
      },
      responses: {
        '200': pageResponse('Location', 'A page of locations'),
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
        mediaTypes: [...mergePatchTypes],
        json: true,
        example: { attributes: { access: 'footpath from the north gate' } },
      },
      responses: {
        '200': changedResponse('Location', 'The location'),
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
