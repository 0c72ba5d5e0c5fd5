import { operation, type BuiltOperation } from './operation.js';
import { enumOf, object, string } from './schema.js';

/** Health, and this document and its page. */

export const docsPath = '/docs';
export const docsAssetPath = '/docs/redoc.standalone.js';
export const documentPath = '/v1/openapi.json';

const tag = 'Service';

export const serviceOperations = (): BuiltOperation[] => [
  operation({
    method: 'get',
    path: '/health',
    operationId: 'health',
    summary: 'Health',
    description: 'Answers 200 once the event store, the read-model store and the blob store answer.',
    tag,
    access: { public: true },
    responses: {
      '200': { description: 'Healthy', content: { 'application/json': object({ status: enumOf(['ok']) }) } },
    },
    problems: ['503'],
  }),
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
        headers: ['ETag'],
        content: { 'application/javascript': string() },
      },
      '304': { description: 'Not modified', headers: ['ETag'] },
    },
  }),
];
