import { mergePatchTypes } from '../http/body.js';
import {
  CreateObservationBody,
  exampleObservationFields,
  GeoPositionCodec,
  LatestDetectionsCodec,
  ListObservationsQuery,
  ObservationCodec,
  observationFields,
  PatchObservationBody,
  sortOptions,
} from './codecs.js';
import { exampleIds } from '../openapi/components.js';
import { operation, type BuiltOperation } from '../openapi/operation.js';
import {
  componentSchema,
  enumOf,
  fieldSchemas,
  integer,
  ref,
  string,
  type Schema,
} from '../openapi/schema.js';
import { changedResponse, createdResponse, pageResponse, pagingQuery } from '../openapi/resource.js';

/**
 * Observations: their operations (their media and history: src/media, src/history). Their schemas are
 * derived from the codecs (./codecs.ts), where each field is declared once.
 */

/** An observation's own fields as stored and sent: the resource's, and the data of its webhook events. */
export const observationFieldSchemas = fieldSchemas(observationFields);

export const observationSchemas: Record<string, Schema> = {
  GeoPosition: componentSchema(GeoPositionCodec),
  LatestDetections: componentSchema(LatestDetectionsCodec),
  Observation: {
    ...componentSchema(ObservationCodec),
    examples: [
      {
        id: 'o_01m7xq3mn18snzhf2p99rppm8q',
        tenantId: 't_01m7xr44nde6cpe35md841agpz',
        ...exampleObservationFields,
        media: [],
        createdAt: '2026-11-21T00:11:43.137Z',
        updatedAt: '2026-11-21T00:11:43.137Z',
        version: 0,
      },
    ],
  },
};

/** The path of observations, and its `:id`: media and history hang below one observation. */
export const observationsPath = '/v1/tenants/:tenantId/observations';
export const observationId = {
  id: { description: "The observation's id", example: exampleIds.observation },
};
const base = observationsPath;

export const observationOperations = (): BuiltOperation[] => [
  operation({
    method: 'post',
    path: base,
    operationId: 'createObservation',
    summary: 'Record an observation',
    description:
      'Unknown fields are refused, not dropped. `locationId` and `visitId` must name a location and a draft ' +
      'visit of the tenant (422 otherwise; 409 for a submitted visit).',
    tag: 'Observations',
    access: { scope: 'observations:write' },
    body: {
      codec: CreateObservationBody,
      name: 'CreateObservationRequest',
      mediaTypes: ['application/json'],
      json: true,
      // Names no location or visit, so that it works as it is in any tenant.
      example: {
        observedAt: '2026-05-01T09:30:00+02:00',
        position: { lat: 45.1, lon: 7.2, accuracyM: 5 },
        notes: 'A fox near the creek',
        attributes: { species: 'Vulpes vulpes', count: 1 },
      },
    },
    responses: {
      '201': createdResponse('Observation', 'Recorded'),
    },
    problems: ['422'],
  }),
  operation({
    method: 'get',
    path: base,
    operationId: 'listObservations',
    summary: 'List observations',
    description: 'Keyset pagination; the cursor only works with the same filters and sort.',
    tag: 'Observations',
    access: { scope: 'observations:read' },
    query: {
      codec: ListObservationsQuery,
      parameters: {
        ...pagingQuery.parameters,
        minPosition: {
          schema: integer(0, Number.MAX_SAFE_INTEGER, { format: 'int64' }),
          description:
            'Wait (up to CONSISTENCY_TIMEOUT) until the list includes the write with this X-Position',
        },
        observedFrom: { description: '`observedAt` at or after' },
        observedTo: { description: '`observedAt` at or before' },
        updatedSince: { description: '`updatedAt` at or after' },
        locationId: { description: 'Only this location' },
        visitId: { description: 'Only this visit' },
        bbox: {
          schema: string({
            maxLength: 200,
            pattern: '^-?\\d+(\\.\\d+)?,-?\\d+(\\.\\d+)?,-?\\d+(\\.\\d+)?,-?\\d+(\\.\\d+)?$',
            examples: ['6.5,44.9,7.5,45.5'],
          }),
          description: '`minLon,minLat,maxLon,maxLat`; `minLon > maxLon` crosses the antimeridian',
        },
        sort: { schema: enumOf(sortOptions, { default: '-observedAt' }), description: 'Order' },
      },
    },
    responses: {
      '200': pageResponse('Observation', 'A page of observations'),
    },
    problems: ['503'],
  }),
  operation({
    method: 'get',
    path: `${base}/:id`,
    operationId: 'getObservation',
    summary: 'Read an observation',
    description: 'Folded from its event stream: always current.',
    tag: 'Observations',
    access: { scope: 'observations:read' },
    pathParameters: observationId,
    headers: ['IfNoneMatch'],
    responses: {
      '200': {
        description: 'The observation',
        headers: ['ETag'],
        content: { 'application/json': ref('Observation') },
      },
      '304': { description: 'Not modified', headers: ['ETag'] },
    },
  }),
  operation({
    method: 'patch',
    path: `${base}/:id`,
    operationId: 'updateObservation',
    summary: 'Change an observation',
    description:
      'A JSON Merge Patch (RFC 7396): present fields replace, `null` clears an optional field, `attributes` ' +
      'merge key by key. A patch that changes nothing writes nothing.',
    tag: 'Observations',
    access: { scope: 'observations:write' },
    pathParameters: observationId,
    headers: ['IfMatch'],
    body: {
      codec: PatchObservationBody,
      name: 'ObservationPatch',
      mediaTypes: [...mergePatchTypes],
      json: true,
      example: { notes: 'Two foxes near the creek', attributes: { count: 2 } },
    },
    responses: {
      '200': changedResponse('Observation', 'The observation'),
    },
    problems: ['412', '422'],
  }),
];
