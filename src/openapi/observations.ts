import { mergePatchTypes } from '../http/body.js';
import { FreeJsonObject } from '../http/codec.js';
import { EventHistoryQuery, maxPageLimit } from '../history/codecs.js';
import { ndjsonType } from '../history/api.js';
import {
  CreateObservationBody,
  GeoPositionCodec,
  ListObservationsQuery,
  PatchObservationBody,
  sortOptions,
} from '../observations/codecs.js';
import { fields, page } from './components.js';
import { operation, type BuiltOperation } from './operation.js';
import {
  arrayOf,
  boundedFreeObject,
  codecObject,
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

/** Observations, their media, and event history. */

export const geoPosition = codecObject(
  GeoPositionCodec,
  {
    lat: number(-90, 90),
    lon: number(-180, 180),
    accuracyM: number(0, 1_000_000, { description: 'Accuracy in metres' }),
  },
  { description: 'A WGS 84 position' },
);

const bodyFields: Record<string, Schema> = {
  observedAt: dateTime('When it was observed: ISO 8601 with a time zone, returned in UTC'),
  position: nullable(ref('GeoPosition')),
  locationId: nullable(fields.resourceId),
  visitId: nullable(fields.resourceId),
  notes: nullable(string({ maxLength: 10_000 })),
  attributes: boundedFreeObject(
    FreeJsonObject,
    'Free-form, at most 16 KiB once serialized; a patch merges it key by key',
  ),
};

const mediaTypes = ['image/jpeg', 'image/png', 'image/webp'] as const;

export const observationSchemas: Record<string, Schema> = {
  GeoPosition: geoPosition,
  Media: object(
    {
      id: string({
        pattern: '^m_[0-9a-f]{26}$',
        description: '`m_` and the first 26 hex digits of the SHA-256',
      }),
      sha256: fields.sha256,
      contentType: enumOf(mediaTypes),
      size: integer(1, undefined, { description: 'Bytes' }),
      width: integer(1),
      height: integer(1),
      addedAt: dateTime(),
    },
    {},
    { description: 'An image attached to an observation' },
  ),
  Observation: object(
    {
      id: fields.id('o'),
      tenantId: fields.tenantId,
      observedAt: dateTime(),
      position: nullable(ref('GeoPosition')),
      locationId: nullable(fields.resourceId),
      visitId: nullable(fields.resourceId),
      notes: nullable(string({ maxLength: 10_000 })),
      attributes: freeObject('Free-form'),
      media: arrayOf(ref('Media'), { description: 'In the order they were added' }),
      createdAt: dateTime(),
      updatedAt: dateTime(),
      version: fields.version,
    },
    {},
    {
      description: 'A field observation',
      examples: [
        {
          id: 'o_01m7xq3mn18snzhf2p99rppm8q',
          tenantId: 't_01m7xr44nde6cpe35md841agpz',
          observedAt: '2026-05-01T07:30:00.000Z',
          position: { lat: 45.1, lon: 7.2, accuracyM: 5 },
          locationId: null,
          visitId: null,
          notes: 'near the creek',
          attributes: { species: 'fox', count: 2 },
          media: [],
          createdAt: '2026-11-21T00:11:43.137Z',
          updatedAt: '2026-11-21T00:11:43.137Z',
          version: 0,
        },
      ],
    },
  ),
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
      data: freeObject('The event as recorded; credential hashes and sealed secrets read `[redacted]`'),
      metadata: ref('EventMetadata'),
    },
    {},
    { description: 'A domain event of the tenant' },
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

const dateQuery = (description: string) => ({ schema: dateTime(), description });

const observationId = { id: { description: "The observation's id", schema: string() } };
const base = '/v1/tenants/:tenantId/observations';

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
      properties: bodyFields,
      mediaTypes: ['application/json'],
      json: true,
    },
    responses: {
      '201': {
        description: 'Recorded',
        headers: ['Location', 'ETag', 'X-Position'],
        content: { 'application/json': ref('Observation') },
      },
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
          schema: integer(0, Number.MAX_SAFE_INTEGER),
          description:
            'Wait (up to CONSISTENCY_TIMEOUT) until the list includes the write with this X-Position',
        },
        observedFrom: dateQuery('`observedAt` at or after'),
        observedTo: dateQuery('`observedAt` at or before'),
        updatedSince: dateQuery('`updatedAt` at or after'),
        locationId: { schema: fields.resourceId, description: 'Only this location' },
        visitId: { schema: fields.resourceId, description: 'Only this visit' },
        bbox: {
          schema: string({
            pattern: '^-?\\d+(\\.\\d+)?,-?\\d+(\\.\\d+)?,-?\\d+(\\.\\d+)?,-?\\d+(\\.\\d+)?$',
            examples: ['6.5,44.9,7.5,45.5'],
          }),
          description: '`minLon,minLat,maxLon,maxLat`; `minLon > maxLon` crosses the antimeridian',
        },
        sort: { schema: enumOf(sortOptions, { default: '-observedAt' }), description: 'Order' },
      },
    },
    responses: {
      '200': {
        description: 'A page',
        content: { 'application/json': page(ref('Observation'), 'A page of observations') },
      },
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
      properties: bodyFields,
      mediaTypes: [...mergePatchTypes],
      json: true,
    },
    responses: {
      '200': {
        description: 'The observation',
        headers: ['ETag', 'X-Position'],
        content: { 'application/json': ref('Observation') },
      },
    },
    problems: ['412', '422'],
  }),
  operation({
    method: 'post',
    path: `${base}/:id/media`,
    operationId: 'uploadMedia',
    summary: 'Attach an image',
    description:
      'The raw bytes of a JPEG, PNG or WebP image, at most MEDIA_MAX_BYTES (10 MB): no JSON, no multipart. ' +
      'The type is read from the bytes, never from Content-Type; the image is decoded in full before ' +
      'anything is stored. The same bytes again answer 200 with the medium already attached. ' +
      'An image over MEDIA_MAX_PIXELS (40,000,000) pixels or MEDIA_MAX_DECODED_BYTES (160,000,000) decoded ' +
      'gets 413 from its header, before any decoding; 503 with Retry-After when MEDIA_DECODE_QUEUE uploads ' +
      'already wait to be decoded.',
    tag: 'Media',
    access: { scope: 'observations:write' },
    pathParameters: observationId,
    body: {
      mediaTypes: [...mediaTypes, 'application/octet-stream'],
      description: 'The image',
    },
    responses: {
      '201': {
        description: 'Attached',
        headers: ['Location', 'X-Position'],
        content: { 'application/json': ref('Media') },
      },
      '200': {
        description: 'These bytes were attached already',
        headers: ['Location'],
        content: { 'application/json': ref('Media') },
      },
    },
    problems: ['413', '415', '503'],
  }),
  operation({
    method: 'get',
    path: `${base}/:id/media/:mediaId`,
    operationId: 'downloadMedia',
    summary: 'Download an image',
    description: 'The bytes never change under an id: `Cache-Control: private, max-age=31536000, immutable`.',
    tag: 'Media',
    access: { scope: 'observations:read' },
    pathParameters: { ...observationId, mediaId: { description: "The medium's id", schema: string() } },
    headers: ['IfNoneMatch'],
    responses: {
      '200': {
        description: 'The image',
        headers: ['ETag'],
        content: Object.fromEntries(mediaTypes.map((type) => [type, {}])),
      },
      '304': { description: 'Not modified', headers: ['ETag'] },
    },
  }),
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
      `In commit order. As JSON, pages of up to ${maxPageLimit} events; with \`Accept: ${ndjsonType}\`, every ` +
      'matching event up to the head when the request arrived, one per line (`limit` then caps the lines).',
    tag: 'Event history',
    access: { scope: 'admin' },
    query: {
      codec: EventHistoryQuery,
      parameters: {
        type: {
          schema: arrayOf(string({ pattern: '^[A-Za-z][A-Za-z0-9._-]{0,99}$' }), { maxItems: 100 }),
          explode: true,
          description: 'Event types, repeated or comma-separated',
        },
        stream: {
          schema: string({ maxLength: 300, pattern: '^[a-z][a-zA-Z]*-t_[0-9a-z]+_.+$' }),
          description: 'One stream',
        },
        from: dateQuery('`occurredAt` at or after'),
        to: dateQuery('`occurredAt` at or before'),
        after: { schema: integer(0, Number.MAX_SAFE_INTEGER), description: 'Start after this position' },
        limit: {
          schema: integer(1, Number.MAX_SAFE_INTEGER),
          description: `Events per JSON page (at most ${maxPageLimit}, default 100), or the NDJSON line cap`,
        },
        cursor: {
          schema: fields.cursor,
          description: 'The `nextCursor` of the previous page; not with `after`',
        },
      },
    },
    responses: {
      '200': {
        description: 'A page, or the NDJSON stream',
        content: {
          'application/json': page(ref('HistoryEvent'), 'A page of events'),
          [ndjsonType]: string({ description: 'One HistoryEvent as JSON per line' }),
        },
      },
    },
  }),
];
