import { ResourceId } from '../http/codec.js';
import { ServiceId, StreamVersion, TenantIdString } from '../http/resource-fields.js';
import { scopes } from '../core/scopes.js';
import { arrayOf, enumOf, integer, object, ref, schemaOf, string, type Schema } from './schema.js';

/**
 * The ids the examples use, one per kind of resource. A client can send an operation's example as it is once
 * it has put its own ids in their place; test/integration/prism-examples.test.ts does exactly that, with the
 * ids of the resources the examples before it created.
 */
export const exampleIds = {
  tenant: 't_01m7xr44nde6cpe35md841agpz',
  user: 'u_3f1c9a7e5b2d4c6a8e0f1b3d5c',
  apiKey: 'k_01m7xrb2v6q7y4n3a8d5f0c2hz',
  oauthClient: 'c_01m7xr9qk2c6q1xw4zq0d8a7bn',
  location: 'l_01m7xr5d3y8s0q2w4e6r8t0y2u',
  visit: 'v_01m7xr6f2g4h6j8k0m2n4p6q8r',
  observation: 'o_01m7xq3mn18snzhf2p99rppm8q',
  media: 'm_9c56cc51b374c3ba189210d5b6',
  job: 'j_01m7xr7s9t1v3w5x7y9z1a3b5c',
  webhook: 'w_01m7xr8d7e9f1g3h5j7k9m1n3p',
  delivery: 'd_4e07408562bedb8b60ce05c1de',
} as const;

/**
 * Field schemas that requests and responses share, for the schemas no codec describes yet (CV jobs,
 * webhook subscriptions, history): derived from the codecs of the same fields.
 */
export const fields = {
  tenantId: schemaOf(TenantIdString),
  /** ResourceId (src/http/codec.ts): what a body may use to name another resource, and a path's id. */
  resourceId: schemaOf(ResourceId),
  /** An id the service made: a type prefix, `_`, 26 characters of Crockford base32. */
  id: (prefix: string) => schemaOf(ServiceId(prefix)),
  version: schemaOf(StreamVersion),
  cursor: string({
    minLength: 1,
    maxLength: 1024,
    // src/http/cursor.ts: the base64url of the position, a dot, and the base64url of its signature.
    pattern: '^[A-Za-z0-9_-]+\\.[A-Za-z0-9_-]+$',
    description: 'The `nextCursor` of the previous page',
  }),
  /** A password or secret: any characters, within its length; UIs hide what is typed. */
  secret: (minLength: number, maxLength: number, extra: Schema = {}) =>
    string({ minLength, maxLength, format: 'password', ...extra }),
  sha256: string({ pattern: '^[0-9a-f]{64}$' }),
};

const fieldError = object(
  {
    path: string({ description: 'Dotted path of the field, e.g. `position.lat`; empty for the whole body' }),
    message: string(),
  },
  {},
  { examples: [{ path: 'position.lat', message: 'must be a latitude between -90 and 90' }] },
);

/** RFC 9457 problem details, as every error but the OAuth token endpoint's is answered. */
const problem = object(
  {
    type: string({
      format: 'uri-reference',
      pattern: '^/problems/[a-z0-9-]+$',
      description:
        'What went wrong, relative to the service: `/problems/validation-error`, `unauthorized`, `forbidden`, ' +
        '`not-found`, `method-not-allowed`, `conflict`, `version-conflict`, `precondition-failed`, ' +
        '`payload-too-large`, `unsupported-media-type`, `unprocessable`, `invalid-idempotency-key`, ' +
        '`idempotency-key-in-flight`, `idempotency-key-reused`, `idempotency-key-lapsed`, `too-many-requests`, `bad-request`, ' +
        '`http-error`, `internal-error`, `not-implemented`, `unavailable`, `store-unavailable`, `store-busy`',
    }),
    title: string(),
    status: integer(400, 599),
  },
  {
    detail: string(),
    instance: string({ description: 'The path of the request' }),
    requestId: string({ description: 'The X-Request-Id of the response; quote it when reporting a problem' }),
    errors: arrayOf(ref('FieldError'), {
      description: 'The fields that failed, for 400 and 422: every one, or the first 20 for a 400',
      maxItems: 20,
    }),
    omittedErrors: integer(1, undefined, {
      description: 'For 400: how many more fields failed than `errors` lists',
    }),
    requiredScope: enumOf(scopes, { description: 'For 403: the scope the route needs' }),
  },
  {
    description: 'An RFC 9457 problem document (`application/problem+json`).',
    examples: [
      {
        type: '/problems/validation-error',
        title: 'The request is not valid',
        status: 400,
        detail: 'position.lat: must be a latitude between -90 and 90',
        errors: [{ path: 'position.lat', message: 'must be a latitude between -90 and 90' }],
        instance: '/v1/tenants/t_01m7xr44nde6cpe35md841agpz/observations',
        requestId: '6aa0d6bd-8250-4d36-ba2f-ee10c051966c',
      },
    ],
  },
);

export const sharedSchemas: Record<string, Schema> = { Problem: problem, FieldError: fieldError };

/** A page of a list: `nextCursor` is null on the last page. */
export const page = (item: Schema, description: string): Schema =>
  object(
    { data: arrayOf(item), nextCursor: { type: ['string', 'null'], minLength: 1 } },
    {},
    { description },
  );

export const headers = {
  ETag: { description: 'The stream version in quotes, e.g. `"0"`', schema: string({ pattern: '^"\\d+"$' }) },
  MediaETag: {
    description: "The image's SHA-256 in quotes: the bytes under a media id never change",
    schema: string({ pattern: '^"[0-9a-f]{64}"$' }),
  },
  ThumbnailETag: {
    description: 'The image\'s SHA-256 and the thumbnail\'s width in quotes, e.g. `"…-w160"`',
    schema: string({ pattern: '^"[0-9a-f]{64}-w\\d+"$' }),
  },
  ScriptETag: {
    description: 'The version of the Redoc bundle in quotes, e.g. `"redoc-2.5.4"`',
    schema: string({ pattern: '^"redoc-[0-9A-Za-z.+-]{1,64}"$' }),
  },
  Location: { description: 'The path of the created resource', schema: string() },
  'X-Position': {
    description: 'The global position of the write: pass it as `minPosition` to a list to read your write',
    schema: string({ pattern: '^\\d+$' }),
  },
  'Export-After-Position': {
    description:
      'On an NDJSON download: the position it starts after (`after`, or 0). The lines are the matching events after it, up to `Export-Head-Position`',
    schema: string({ pattern: '^\\d+$' }),
  },
  'Export-Head-Position': {
    description: "On an NDJSON download: the store's head when it began; no later event is in it",
    schema: string({ pattern: '^\\d+$' }),
  },
  'Retry-After': { description: 'Seconds to wait before retrying', schema: string({ pattern: '^\\d+$' }) },
  'WWW-Authenticate': {
    description:
      'On 401, the schemes the route takes: `Bearer realm="observation-service"…, ApiKey realm=…`. On a 403 for a missing scope (RFC 6750 §3.1): `Bearer realm="observation-service", error="insufficient_scope", scope="<the scope>"`',
    schema: string(),
  },
  RateLimit: {
    description:
      'Where the credential stands in its window (draft-ietf-httpapi-ratelimit-headers): the requests left ' +
      '(`r`) and the seconds until the window resets (`t`). On every response but those of `/health…`, unless ' +
      'RATE_LIMIT is `off`.',
    schema: string({
      maxLength: 100,
      pattern: '^"default";r=\\d+;t=\\d+$',
      examples: ['"default";r=599;t=60'],
    }),
  },
  'RateLimit-Policy': {
    description: 'The limit per credential: `q` requests in `w` seconds (RATE_LIMIT). Sent with `RateLimit`.',
    schema: string({
      maxLength: 100,
      pattern: '^"default";q=\\d+;w=\\d+$',
      examples: ['"default";q=600;w=60'],
    }),
  },
} satisfies Record<string, { description: string; schema: Schema }>;

/** The response header each component describes, where the two names differ. */
export const headerNames: Partial<Record<keyof typeof headers, string>> = {
  MediaETag: 'ETag',
  ThumbnailETag: 'ETag',
  ScriptETag: 'ETag',
};

/** The rate limit's headers (src/http/rate-limit.ts), on every response of every rate-limited route. */
export const rateLimitHeaders = {
  RateLimit: { $ref: '#/components/headers/RateLimit' },
  'RateLimit-Policy': { $ref: '#/components/headers/RateLimit-Policy' },
};

export const parameters = {
  TenantId: {
    name: 'tenantId',
    in: 'path',
    required: true,
    description: "The tenant's id; a credential may only name its own tenant",
    schema: fields.tenantId,
    example: exampleIds.tenant,
  },
  IfMatch: {
    name: 'If-Match',
    in: 'header',
    required: false,
    description: 'The ETag the change is based on: a stale one gets 412. Without it, a lost race gets 409.',
    schema: string({ maxLength: 1024, pattern: '^[\\x20-\\x7e]+$', examples: ['"3"'] }),
  },
  IfNoneMatch: {
    name: 'If-None-Match',
    in: 'header',
    required: false,
    description: 'The ETag the client holds: a current one gets 304 without a body',
    schema: string({ maxLength: 1024, pattern: '^[\\x20-\\x7e]+$', examples: ['"3"'] }),
  },
  IdempotencyKey: {
    name: 'Idempotency-Key',
    in: 'header',
    required: false,
    description:
      'Makes the POST safe to retry: the first answer (except 5xx, 408 and 429) is kept for 24 hours, ' +
      'sealed, and replayed, with `Idempotency-Replayed: true`, to the same credential with the same scopes ' +
      'sending the same key to the same route with the same parameters and body, once the route has ' +
      'admitted it (a credential that may not call the route gets its 401 or 403). 1 to 255 printable ' +
      'ASCII characters.',
    schema: string({ minLength: 1, maxLength: 255, pattern: '^[\\x20-\\x7e]+$' }),
  },
};

/** The statuses an operation may answer with a problem, and what each means in general. */
export const problemResponses = {
  '400': 'The request is not valid: `errors` lists every field or parameter that failed',
  '401': 'No credential, or one that is not valid (never says which check failed)',
  '403':
    'The credential lacks the scope (`requiredScope` names it), or the platform key was used on tenant data',
  '404': 'No such resource, or a tenant the credential does not belong to',
  '409':
    'A conflict with the current state, a lost race (`version-conflict`), or an Idempotency-Key in flight',
  '412': 'If-Match names a version that is not current',
  '413': 'The body is larger than the limit',
  '415': 'The body is not of a supported media type, not UTF-8, or compressed',
  '422': 'The request names something that does not exist, or reuses an Idempotency-Key for another request',
  '429': 'Too many requests, or too many failed logins; `Retry-After` says when to retry',
  '503':
    'A store does not answer or refuses writes (its disk is full or it is read-only), a list could not catch up with `minPosition` in time, or a request outlived its hold on its Idempotency-Key and wrote nothing',
} as const;

export type ProblemStatus = keyof typeof problemResponses;

const problemNames: Record<ProblemStatus, string> = {
  '400': 'BadRequest',
  '401': 'Unauthorized',
  '403': 'Forbidden',
  '404': 'NotFound',
  '409': 'Conflict',
  '412': 'PreconditionFailed',
  '413': 'PayloadTooLarge',
  '415': 'UnsupportedMediaType',
  '422': 'Unprocessable',
  '429': 'TooManyRequests',
  '503': 'Unavailable',
};

const problemContent = { 'application/problem+json': { schema: ref('Problem') } };

const problemHeaders: Partial<Record<ProblemStatus, Record<string, unknown>>> = {
  '401': { 'WWW-Authenticate': { $ref: '#/components/headers/WWW-Authenticate' } },
  '403': { 'WWW-Authenticate': { $ref: '#/components/headers/WWW-Authenticate' } },
  '409': { 'Retry-After': { $ref: '#/components/headers/Retry-After' } },
  '429': { 'Retry-After': { $ref: '#/components/headers/Retry-After' } },
  '503': { 'Retry-After': { $ref: '#/components/headers/Retry-After' } },
};

const unexpectedError = {
  description: 'An unexpected failure (500): nothing internal is revealed; quote the `requestId`',
  headers: rateLimitHeaders,
  content: problemContent,
};

/** Problems of the routes the rate limit counts: every route but `/health…`, which has none of these. */
export const responseComponents = {
  ...Object.fromEntries(
    (Object.keys(problemResponses) as ProblemStatus[]).map((status) => [
      problemNames[status],
      {
        description: problemResponses[status],
        headers: { ...problemHeaders[status], ...rateLimitHeaders },
        content: problemContent,
      },
    ]),
  ),
  UnexpectedError: unexpectedError,
  /** The same, for the health checks, which the rate limit does not count. */
  UnexpectedHealthError: { description: unexpectedError.description, content: problemContent },
};

export const problemRef = (status: ProblemStatus) => ({
  $ref: `#/components/responses/${problemNames[status]}`,
});
