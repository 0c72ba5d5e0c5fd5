import type * as t from 'io-ts';
import type { Scope } from '../core/scopes.js';
import type { StrictObjectCodec } from '../http/codec.js';
import {
  headerNames,
  headers as headerComponents,
  problemRef,
  rateLimitHeaders,
  type ProblemStatus,
} from './components.js';
import { fields } from './components.js';
import { codecQuery, schemaOf, type QueryParameter, type Schema } from './schema.js';

/**
 * One operation of the API, described next to the codecs its route decodes with. `operation()` turns it
 * into an OpenAPI operation object with its parameters, security and problem responses filled in from
 * what the route does: who may call it, whether it reads a body or a query, whether it is a POST that
 * takes an Idempotency-Key.
 */

export type Access =
  /** No credential at all. */
  | { public: true }
  /** The platform administrator key alone. */
  | { platformOnly: true }
  /** A tenant credential with the scope (`admin` implies every scope); `platform` lets the platform key in. */
  | { scope: Scope; platform?: boolean };

type Header = keyof typeof headerComponents;

export interface ResponseSpec {
  description: string;
  /** Media type -> schema; none for an empty body. */
  content?: Record<string, Schema>;
  headers?: readonly Header[];
}

export interface OperationSpec {
  method: 'get' | 'post' | 'patch' | 'delete';
  /** The route's path as the router has it (`/v1/tenants/:tenantId/observations/:id`). */
  path: string;
  operationId: string;
  summary: string;
  description?: string;
  tag: string;
  access: Access;
  /** Path parameters other than tenantId. */
  pathParameters?: Record<string, { description: string; schema?: Schema; example?: string }>;
  query?: { codec: StrictObjectCodec; parameters: Record<string, QueryParameter> };
  /** Header parameters the route reads. */
  headers?: ('IfMatch' | 'IfNoneMatch')[];
  body?: {
    /** The codec the route decodes the body with: the schema is derived from it. */
    codec?: StrictObjectCodec;
    /** The whole schema, for a body no codec decodes (the OAuth token request's form). */
    schema?: Schema;
    /** Named in components.schemas, for reuse and readable docs. */
    name?: string;
    mediaTypes: string[];
    required?: boolean;
    description?: string;
    /** A body of bytes (no codec, no schema): the largest the service accepts, in bytes. */
    maxBytes?: number;
    /** A JSON body: 400 for malformed JSON, 413, 415. */
    json?: boolean;
    /**
     * A body the service accepts as it is, once its ids name the client's own resources (the ids of
     * `exampleIds`); the documentation page shows it. Every body described by a schema has one.
     */
    example?: unknown;
  };
  responses: Record<string, ResponseSpec>;
  /** Problem statuses beyond those that follow from the access, body, query and method. */
  problems?: ProblemStatus[];
}

export interface BuiltOperation {
  method: OperationSpec['method'];
  /** The OpenAPI path (`/v1/tenants/{tenantId}/observations/{id}`). */
  path: string;
  operation: Record<string, unknown>;
  /** Schemas for components.schemas that the operation named (request bodies). */
  schemas: Record<string, Schema>;
  /** The codecs the route decodes its body and query with, which the document was built from. */
  codecs: { body?: StrictObjectCodec; query?: StrictObjectCodec };
}

/**
 * The schema of a body that is bytes (an image): a binary string of that media type, so that generated
 * clients type it as a file or a blob rather than `unknown`. What a client sends also says its largest size
 * (`maxLength`, in bytes), as every string a client sends does (.spectral.yaml's request-string-limit).
 */
export const bytesOf = (mediaType: string, maxBytes?: number): Schema => ({
  type: 'string',
  format: 'binary',
  contentMediaType: mediaType,
  ...(maxBytes === undefined ? {} : { maxLength: maxBytes }),
});

/** The largest body of bytes an operation takes: it must say, since its body has no schema to bound it. */
const bytesLimit = (spec: OperationSpec): number => {
  if (spec.body?.maxBytes === undefined)
    throw new Error(`${spec.operationId}: a body of bytes needs maxBytes, the largest the service accepts`);
  return spec.body.maxBytes;
};

/** `:param` -> `{param}`. */
export const openApiPath = (path: string): string => path.replace(/:([A-Za-z0-9_]+)/g, '{$1}');

const securityFor = (access: Access) => {
  if ('public' in access) return { security: [] };
  if ('platformOnly' in access) return { security: [{ apiKey: [] }], 'x-platform-key': 'required' };
  const { scope } = access;
  return {
    // Scopes are an OAuth notion to most tools (Spectral's oas3-operation-security-defined among them):
    // listed under oauth2 only; `x-required-scope` names the scope for the API key and the bearer token.
    security: [{ apiKey: [] }, { bearer: [] }, { oauth2: [scope] }],
    'x-required-scope': scope,
    ...(access.platform ? { 'x-platform-key': 'allowed' } : {}),
  };
};

const accessText = (access: Access): string => {
  if ('public' in access) return 'Needs no credential.';
  if ('platformOnly' in access) return 'Needs the platform administrator key.';
  return `Needs the scope \`${access.scope}\`${access.platform ? ', or the platform administrator key' : ''}.`;
};

const isAuthPath = (path: string) => path.startsWith('/v1/auth/') || path.startsWith('/v1/oauth/');

export const operation = (spec: OperationSpec): BuiltOperation => {
  const path = openApiPath(spec.path);
  const names = [...spec.path.matchAll(/:([A-Za-z0-9_]+)/g)].map((match) => match[1]!);
  const pathParameters = names.map((name) => {
    if (name === 'tenantId') return { $ref: '#/components/parameters/TenantId' };
    const given = spec.pathParameters?.[name];
    if (!given) throw new Error(`${spec.operationId}: the path parameter ${name} is not described`);
    return {
      name,
      in: 'path',
      required: true,
      description: given.description,
      // Any id the router passes on: one that names nothing gets 404.
      schema: given.schema ?? fields.resourceId,
      ...(given.example === undefined ? {} : { example: given.example }),
    };
  });
  // As src/http/idempotency.ts decides: every POST behind a guard; the public token endpoints never.
  const idempotent = spec.method === 'post' && !('public' in spec.access);
  const parameterList = [
    ...pathParameters,
    ...(spec.query ? codecQuery(spec.query.codec, spec.query.parameters) : []),
    ...(spec.headers ?? []).map((name) => ({ $ref: `#/components/parameters/${name}` })),
    ...(idempotent ? [{ $ref: '#/components/parameters/IdempotencyKey' }] : []),
  ];

  const schemas: Record<string, Schema> = {};
  let requestBody: Record<string, unknown> | undefined;
  if (spec.body) {
    const { codec, name } = spec.body;
    // Without a codec or a schema the body is bytes (an image): the media types say it all.
    let schema: Schema | undefined;
    if (codec) schema = schemaOf(codec as unknown as t.Mixed);
    else schema = spec.body.schema;
    if (schema && spec.body.example === undefined)
      throw new Error(`${spec.operationId}: a body with a schema needs an example that the service accepts`);
    if (schema && name) {
      schemas[name] = schema;
      schema = { $ref: `#/components/schemas/${name}` };
    }
    requestBody = {
      required: spec.body.required ?? true,
      ...(spec.body.description ? { description: spec.body.description } : {}),
      content: Object.fromEntries(
        spec.body.mediaTypes.map((type) => [
          type,
          schema ? { schema, example: spec.body!.example } : { schema: bytesOf(type, bytesLimit(spec)) },
        ]),
      ),
    };
  }

  const problems = new Set<ProblemStatus>(spec.problems ?? []);
  if (!('public' in spec.access)) ['401', '403'].forEach((s) => problems.add(s as ProblemStatus));
  if (names.includes('tenantId')) problems.add('404');
  // Every route refuses query parameters it does not take (src/http/query-parameters.ts).
  problems.add('400');
  if (spec.body?.json) ['400', '413', '415'].forEach((s) => problems.add(s as ProblemStatus));
  if (idempotent) ['400', '409', '422'].forEach((s) => problems.add(s as ProblemStatus));
  // Every write may lose a race with another one (version-conflict) or conflict with the state.
  if (spec.method !== 'get' && !isAuthPath(spec.path)) problems.add('409');
  // As src/http/rate-limit.ts counts: every route but the health checks, whose answers carry its headers.
  const rateLimited = !spec.path.startsWith('/health');
  if (rateLimited) problems.add('429');

  const responses: Record<string, unknown> = {};
  for (const [status, response] of Object.entries(spec.responses)) {
    const headers = {
      ...Object.fromEntries(
        (response.headers ?? []).map((header) => [
          headerNames[header] ?? header,
          { $ref: `#/components/headers/${header}` },
        ]),
      ),
      ...(rateLimited ? rateLimitHeaders : {}),
    };
    responses[status] = {
      description: response.description,
      ...(Object.keys(headers).length > 0 ? { headers } : {}),
      ...(response.content
        ? {
            content: Object.fromEntries(
              Object.entries(response.content).map(([type, schema]) => [type, { schema }]),
            ),
          }
        : {}),
    };
  }
  // A status the operation answers in a form of its own (OAuth's errors) keeps that form.
  for (const status of [...problems].sort()) responses[status] ??= problemRef(status);
  // 500 by name, for tools that look for it (OWASP API8); `default` for any other status a proxy may add.
  const unexpected = {
    $ref: `#/components/responses/${rateLimited ? 'UnexpectedError' : 'UnexpectedHealthError'}`,
  };
  responses['500'] = unexpected;
  responses.default = unexpected;

  return {
    method: spec.method,
    path,
    schemas,
    codecs: {
      ...(spec.body?.codec ? { body: spec.body.codec } : {}),
      ...(spec.query ? { query: spec.query.codec } : {}),
    },
    operation: {
      operationId: spec.operationId,
      summary: spec.summary,
      description: [spec.description, accessText(spec.access)].filter(Boolean).join('\n\n'),
      tags: [spec.tag],
      ...securityFor(spec.access),
      ...(parameterList.length > 0 ? { parameters: parameterList } : {}),
      ...(requestBody ? { requestBody } : {}),
      responses,
    },
  };
};
