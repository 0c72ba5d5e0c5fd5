import { mergePatchTypes } from '../http/body.js';
import { exampleIds, fields, page } from '../openapi/components.js';
import { operation, type BuiltOperation } from '../openapi/operation.js';
import { minPositionQuery, pagingQuery, readOne } from '../openapi/resource.js';
import { arrayOf, dateTime, enumOf, nullable, object, ref, string, type Schema } from '../openapi/schema.js';
import { CreateVisitBody, ListVisitsQuery, PatchVisitBody, visitSorts } from './codecs.js';

/** Field visits: their schema and operations. */

const visitFields: Record<string, Schema> = {
  locationId: fields.resourceId,
  startedAt: dateTime(),
  endedAt: nullable(dateTime()),
  participants: arrayOf(fields.text(200, 1), { maxItems: 100 }),
  notes: nullable(fields.text(10_000)),
};

export const visitSchemas: Record<string, Schema> = {
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
        properties: visitFields,
        mediaTypes: ['application/json'],
        json: true,
        example: {
          locationId: exampleIds.location,
          startedAt: '2026-05-01T08:00:00+02:00',
          participants: ['Ada', 'Grace'],
        },
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
          minPosition: minPositionQuery,
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
        example: { endedAt: '2026-05-01T12:30:00+02:00', notes: 'Sunny, light wind from the west' },
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
