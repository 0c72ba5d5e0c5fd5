import { observationId, observationsPath } from '../observations/openapi.js';
import { fields, page } from '../openapi/components.js';
import { operation, type BuiltOperation } from '../openapi/operation.js';
import {
  arrayOf,
  dateTime,
  freeObject,
  integer,
  nullable,
  object,
  ref,
  string,
  type Schema,
} from '../openapi/schema.js';
import { ndjsonType } from './api.js';
import { EventHistoryQuery, maxPageLimit } from './codecs.js';

/** The event history: an observation's versions, and the tenant's events. */

export const historySchemas: Record<string, Schema> = {
  EventMetadata: object(
    {
      tenantId: fields.tenantId,
      actor: string({ description: 'Who caused it, e.g. `apikey:k_…`, `user:u_…`, `system:cv-worker`' }),
      correlationId: string(),
      causationId: { type: ['string', 'null'] },
      occurredAt: dateTime(),
      schemaVersion: integer(1),
    },
    {
      traceparent: string({
        pattern: '^[0-9a-f]{2}-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}$',
        description:
          'W3C traceparent of the span that wrote the event; only on events written while traces were on',
        examples: ['00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01'],
      }),
    },
    { description: "An event's envelope metadata" },
  ),
  HistoryEvent: object(
    {
      id: string(),
      type: string({ examples: ['ObservationRecorded'] }),
      streamName: string({
        examples: ['observation-t_01m7xr44nde6cpe35md841agpz_o_01m7xq3mn18snzhf2p99rppm8q'],
      }),
      streamVersion: integer(0),
      position: integer(1, undefined, { description: 'Global position, in commit order' }),
      data: freeObject(
        'The event as recorded, secret fields (credential hashes, sealed secrets) as `{"commitment": "<hex>"}`, ' +
          'or `[redacted]` on events stored before commitments (see `uncommitted`)',
      ),
      metadata: ref('EventMetadata'),
      hash: nullable(
        string({
          pattern: '^[0-9a-f]{64}$',
          description: "The event's SHA-256 chain hash, lowercase hex (docs/auditors.md#the-hash)",
        }),
      ),
      previousHash: nullable(
        string({
          pattern: '^([0-9a-f]{64})?$',
          description:
            "The hash of the stream's previous event; empty at version 0, null when the store lacks that event",
        }),
      ),
    },
    {
      uncommitted: arrayOf(string(), {
        description:
          'Secret fields shown `[redacted]` on an event stored before they were committed to: its hash cannot be recomputed from the export',
      }),
    },
    { description: 'A domain event of the tenant, with the hashes that chain it (docs/auditors.md)' },
  ),
  ObservationVersion: object(
    {
      version: fields.version,
      event: object(
        {
          id: string(),
          type: string(),
          data: freeObject('The event as recorded'),
          metadata: ref('EventMetadata'),
          position: integer(1),
        },
        {},
      ),
      observation: nullable(ref('Observation')),
    },
    {},
    { description: 'The observation as it was after one event of its stream' },
  ),
};

/** An event type's name, as EventTypesParam (./codecs.ts) checks each one. */
const eventTypeName = '[A-Za-z][A-Za-z0-9._-]{0,99}';

const base = observationsPath;

export const historyOperations = (): BuiltOperation[] => [
  operation({
    method: 'get',
    path: `${base}/:id/history`,
    operationId: 'getObservationHistory',
    summary: "An observation's versions",
    description: 'Every event of the observation, each with the observation as it was after it.',
    tag: 'Event history',
    access: { scope: 'observations:read' },
    pathParameters: observationId,
    headers: ['IfNoneMatch'],
    responses: {
      '200': {
        description: 'Oldest first',
        headers: ['ETag'],
        content: { 'application/json': arrayOf(ref('ObservationVersion')) },
      },
      '304': { description: 'Not modified', headers: ['ETag'] },
    },
  }),
  operation({
    method: 'get',
    path: '/v1/tenants/:tenantId/events',
    operationId: 'listEvents',
    summary: "The tenant's event history",
    description:
      `In commit order, or newest first (\`order=desc\`). As JSON, pages of up to ${maxPageLimit} events; with \`Accept: ${ndjsonType}\`, every ` +
      'matching event up to the head when the request arrived, one per line (`limit` then caps the lines).',
    tag: 'Event history',
    access: { scope: 'admin' },
    query: {
      codec: EventHistoryQuery,
      parameters: {
        type: {
          // Each value is one name or a comma-separated list (`type=A,B`), so both forms match the schema.
          schema: arrayOf(
            string({
              maxLength: 10_099,
              pattern: `^${eventTypeName}(,${eventTypeName}){0,99}$`,
              examples: ['ObservationRecorded,ObservationUpdated'],
            }),
            { maxItems: 100 },
          ),
          explode: true,
          example: ['ObservationRecorded,ObservationUpdated'],
          description:
            'Event types, repeated (`type=A&type=B`) or comma-separated (`type=A,B`), or both; at most 100 ' +
            'distinct names in all',
        },
        stream: {
          schema: string({ maxLength: 300, pattern: '^[a-z][a-zA-Z]*-t_[0-9a-z]+_.+$' }),
          description: 'One stream',
        },
        from: { description: '`occurredAt` at or after' },
        to: { description: '`occurredAt` at or before' },
        after: {
          schema: integer(0, Number.MAX_SAFE_INTEGER, { format: 'int64' }),
          description: 'Start after this position',
        },
        limit: {
          schema: integer(1, Number.MAX_SAFE_INTEGER, { format: 'int64' }),
          description: `Events per JSON page (at most ${maxPageLimit}, default 100), or the NDJSON line cap`,
        },
        cursor: {
          schema: fields.cursor,
          description: 'The `nextCursor` of the previous page; not with `after`',
        },
        order: {
          description:
            '`asc` (the default): commit order. `desc`: newest first, from the head when the request ' +
            'arrived, each page older than the one before (its `nextCursor`); JSON pages only, not with `after`',
        },
      },
    },
    responses: {
      '200': {
        description: 'A page, or the NDJSON stream',
        headers: ['Export-After-Position', 'Export-Head-Position'],
        content: {
          'application/json': page(ref('HistoryEvent'), 'A page of events'),
          [ndjsonType]: string({ description: 'One HistoryEvent as JSON per line' }),
        },
      },
    },
  }),
];
