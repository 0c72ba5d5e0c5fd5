import { operation, type BuiltOperation } from './operation.js';
import { faviconPath } from './page-assets.js';
import { arrayOf, dateTime, enumOf, integer, nullable, object, string, type Schema } from './schema.js';

/** Health, and this document and its page. */

export const docsPath = '/docs';
export const docsAssetPath = '/docs/redoc.standalone.js';
export const documentPath = '/v1/openapi.json';

const tag = 'Service';

const check = object(
  {
    status: enumOf(['pass', 'warn', 'fail'], {
      description: '`warn`: something works only in part (capabilities); the process still takes traffic',
    }),
  },
  {
    error: string({ description: 'Why it fails' }),
    lastRefusedWrite: object(
      { code: string({ description: 'e.g. SQLITE_FULL, ENOSPC, SQLITE_READONLY' }), at: dateTime() },
      {},
      { description: 'storage: the last write a store refused for lack of space or write access' },
    ),
  },
);

const consumer: Schema = {
  ...object(
    {
      name: string(),
      state: enumOf(['running', 'retrying', 'standby', 'stopped']),
      lastError: nullable(string()),
      lastErrorAt: nullable(dateTime()),
      recoveredAt: nullable(
        dateTime(
          'When it was started again after `lastError` and has run since; null while that failure is current',
        ),
      ),
      restarts: integer(0),
    },
    {
      checkpoint: integer(0, undefined, { description: 'The last position it has handled' }),
      lag: integer(0, undefined, { description: 'Events between its checkpoint and the head of the store' }),
      parked: integer(0, undefined, { description: 'Events it parked (`projections status` lists them)' }),
    },
  ),
  additionalProperties: true,
};

/**
 * The readiness report; when not ready, with the members of a problem document beside it. The checks,
 * the consumers and the detail only for the platform key.
 */
const readiness = (status: 'ready' | 'not-ready'): Schema =>
  object(
    {
      status: enumOf([status]),
      ...(status === 'not-ready' ? { type: enumOf(['/problems/not-ready']), title: string() } : {}),
    },
    {
      checks: object(
        Object.fromEntries(
          [
            'draining',
            'eventStore',
            'readModels',
            'blobs',
            'idempotency',
            'storage',
            'consumers',
            'issuer',
            'capabilities',
          ].map((name) => [name, check]),
        ),
        {},
        { description: 'Only for the platform key' },
      ),
      consumers: arrayOf(consumer, { description: 'Only for the platform key' }),
      ...(status === 'not-ready'
        ? { detail: string({ description: 'Which checks fail, and why; only for the platform key' }) }
        : {}),
    },
  );

const readinessOperation = (path: string, operationId: string, alias: boolean) =>
  operation({
    method: 'get',
    path,
    operationId,
    summary: alias ? 'Readiness (alias of /health/ready)' : 'Readiness',
    description:
      'Whether this process should get traffic: every store answers (event store, read models, blobs, ' +
      'idempotency records), the storage takes writes (not full, not read-only), every consumer runs, and ' +
      'the process is not shutting down, and no process with another PUBLIC_URL took over while this one ' +
      'was frozen. Without a credential it says only that (`status`); with the ' +
      'platform key (`X-API-Key`, or `Authorization: Bearer`) it lists every check and each consumer with ' +
      'its lag and parked events, which may name a database and its error. Any other credential is ' +
      'answered as none. With METRICS=port the metrics port serves the detailed answer as well.',
    tag,
    access: { public: true },
    responses: {
      '200': { description: 'Ready', content: { 'application/json': readiness('ready') } },
      '503': {
        description: 'Not ready: `checks` says which check fails',
        headers: ['Retry-After'],
        content: { 'application/json': readiness('not-ready') },
      },
    },
  });

export const serviceOperations = (): BuiltOperation[] => [
  operation({
    method: 'get',
    path: '/health/live',
    operationId: 'liveness',
    summary: 'Liveness',
    description: 'Answers 200 while the process runs, also while it drains; restart it when this fails.',
    tag,
    access: { public: true },
    responses: {
      '200': { description: 'Alive', content: { 'application/json': object({ status: enumOf(['alive']) }) } },
    },
  }),
  readinessOperation('/health/ready', 'readiness', false),
  readinessOperation('/health', 'health', true),
  operation({
    method: 'get',
    path: documentPath,
    operationId: 'openApiDocument',
    summary: 'This document',
    description: 'The OpenAPI 3.1 description of the API, generated from the codecs the routes decode with.',
    tag,
    access: { public: true },
    responses: {
      '200': {
        description: 'The OpenAPI document',
        content: {
          'application/json': {
            type: 'object',
            required: ['openapi', 'info', 'paths'],
            properties: {
              openapi: { type: 'string', const: '3.1.0' },
              info: { type: 'object' },
              paths: { type: 'object' },
            },
          },
        },
      },
    },
  }),
  operation({
    method: 'get',
    path: docsPath,
    operationId: 'docsPage',
    summary: 'The documentation page',
    description: 'This document rendered with Redoc, served by the service itself: it works offline.',
    tag,
    access: { public: true },
    responses: { '200': { description: 'An HTML page', content: { 'text/html': string() } } },
  }),
  operation({
    method: 'get',
    path: docsAssetPath,
    operationId: 'docsScript',
    summary: "The documentation page's script",
    description: 'The Redoc standalone bundle, from the installed `redoc` package.',
    tag,
    access: { public: true },
    headers: ['IfNoneMatch'],
    responses: {
      '200': {
        description: 'JavaScript',
        headers: ['ScriptETag'],
        content: { 'application/javascript': string() },
      },
      '304': { description: 'Not modified', headers: ['ScriptETag'] },
    },
  }),
  operation({
    method: 'get',
    path: faviconPath,
    operationId: 'favicon',
    summary: "The service's icon",
    description:
      'An SVG image, whatever the name says: browsers ask for it, and the documentation page names it.',
    tag,
    access: { public: true },
    responses: { '200': { description: 'An SVG image', content: { 'image/svg+xml': string() } } },
  }),
];
