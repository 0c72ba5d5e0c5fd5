import { mergePatchTypes } from '../http/body.js';
import { exampleIds } from '../openapi/components.js';
import { operation, type BuiltOperation } from '../openapi/operation.js';
import {
  changedResponse,
  createdResponse,
  minPositionQuery,
  pageResponse,
  pagingQuery,
  readOne,
} from '../openapi/resource.js';
import { componentSchemas, type Schema } from '../openapi/schema.js';
import { CreateVisitBody, ListVisitsQuery, PatchVisitBody, VisitCodec } from './codecs.js';

/** Field visits: their operations. Their schemas are derived from the codecs (./codecs.ts). */

export const visitSchemas: Record<string, Schema> = componentSchemas([VisitCodec]);

const visits = '/v1/tenants/:tenantId/visits';

export const visitOperations = (): BuiltOperation[] => {
  const visit = readOne({
    path: visits,
    one: 'visit',
    schema: 'Visit',
    tag: 'Visits',
    read: 'observations:read',
    example: exampleIds.visit,
  });
  return [
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
        mediaTypes: ['application/json'],
        json: true,
        example: {
          locationId: exampleIds.location,
          startedAt: '2026-05-01T08:00:00+02:00',
          participants: ['Ada', 'Grace'],
        },
      },
      responses: {
        '201': createdResponse('Visit', 'Created'),
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
          minPosition: minPositionQuery,
          locationId: { description: 'Only visits to this location' },
          status: { description: 'Only visits in this state' },
          startedFrom: { description: '`startedAt` at or after' },
          startedTo: { description: '`startedAt` at or before' },
          sort: { description: 'Order' },
        },
      },
      responses: {
        '200': pageResponse('Visit', 'A page of visits'),
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
        mediaTypes: [...mergePatchTypes],
        json: true,
        example: { endedAt: '2026-05-01T12:30:00+02:00', notes: 'Sunny, light wind from the west' },
      },
      responses: {
        '200': changedResponse('Visit', 'The visit'),
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
        '200': changedResponse('Visit', 'Submitted'),
      },
      problems: ['412', '503'],
    }),
  ];
};
