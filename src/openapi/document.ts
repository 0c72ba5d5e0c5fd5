import { scopes, type Scope } from '../core/scopes.js';
import { features } from '../features.js';
import { headers, parameters, responseComponents, sharedSchemas } from './components.js';
import type { BuiltOperation } from './operation.js';
import type { Schema } from './schema.js';
import { serviceOperations } from './service.js';

/**
 * The OpenAPI 3.1 document of the service, served at GET /v1/openapi.json and rendered at GET /docs. Each
 * feature describes its operations next to the codecs its routes use (src/<feature>/openapi.ts);
 * test/integration/openapi.test.ts checks it against the router, the route guards and real responses.
 */

const scopeDescriptions: Record<Scope, string> = {
  'observations:read': 'Read observations, their media and history, and visits',
  'observations:write': 'Record and change observations, upload media, create and submit visits',
  'cv:read': 'Read CV jobs and the models',
  'cv:write': 'Request CV jobs',
  'locations:read': 'Read locations',
  'locations:write': 'Create, change and delete locations',
  'webhooks:manage': 'Manage webhook subscriptions and their deliveries',
  admin: "Everything within the tenant: users, API keys, OAuth clients, the tenant's event history",
};

const description = `A multi-tenant, event-sourced API for field observations, their images, computer-vision jobs,
locations and field visits. Tenant resources live under \`/v1/tenants/{tenantId}\`; every credential belongs to
exactly one tenant.

## Authentication

Send exactly one credential with every request, except to \`/health\`, the token endpoints, \`/.well-known/*\`
and this documentation:

| method | header | how to get it |
| --- | --- | --- |
| API key | \`X-API-Key: obs_<tenantId>.<keyId>.<secret>\` | \`POST /v1/tenants/{tenantId}/api-keys\` (shown once) |
| user token | \`Authorization: Bearer <JWT>\` | \`POST /v1/auth/token {email, password}\` |
| client token | \`Authorization: Bearer <JWT>\` | \`POST /v1/oauth/token\` (OAuth 2.0 client credentials) |
| platform key | \`X-API-Key: <PLATFORM_ADMIN_KEY>\` | the operator's configuration: creates and reads tenants |

Every credential carries scopes; each operation names the one it needs (\`x-required-scope\`, and its
\`oauth2\` security requirement). \`admin\` implies every scope within its own tenant. A missing or invalid credential gets
401 with \`WWW-Authenticate\`; a credential without the scope gets 403 naming it (\`requiredScope\`); a
credential on another tenant's path gets 404, exactly as a tenant that does not exist.

<!-- ReDoc-Inject: <security-definitions> -->

## Errors

Every error is \`application/problem+json\` (RFC 9457) with \`type\`, \`title\`, \`status\`, \`detail\`,
\`instance\` and \`requestId\`; validation errors list each failing field in \`errors\`. Unknown fields and
query parameters are refused, not ignored. The one exception is the OAuth token endpoint, which answers RFC 6749
JSON errors.

## Lists, consistency and concurrency

Lists page by keyset: pass \`nextCursor\` as \`cursor\` (\`limit\` 1–200, default 50). They read projections
that follow the event store; pass the \`X-Position\` of a write as \`minPosition\` to read it. Single resources
are always current, with \`ETag\` (the stream version) for \`If-None-Match\` and \`If-Match\`. POSTs take an
\`Idempotency-Key\`. Requests are rate-limited per credential (\`RateLimit\` headers; 429 with \`Retry-After\`).

## Webhooks

Webhook subscriptions (\`/v1/tenants/{tenantId}/webhooks\`) receive the events under *Webhook events*:
\`observation.created\`, \`observation.updated\`, \`cv.job.completed\`, \`cv.job.failed\` and \`visit.submitted\`, each
a JSON envelope \`{id, type, tenantId, timestamp, data}\` POSTed to the subscribed URL and signed with the
subscription's secret: \`X-Service-Signature\` is the hex HMAC-SHA256 of the raw body, and the Standard Webhooks
headers are sent too.`;

const tags = [
  ['Tokens', 'User logins, refresh tokens, the OAuth 2.0 token endpoint and discovery'],
  ['Tenants', 'Tenants: created and listed by the platform administrator'],
  ['Users', "A tenant's users, who log in with an e-mail and a password"],
  ['API keys', "A tenant's API keys"],
  ['OAuth clients', "A tenant's OAuth 2.0 clients (client credentials)"],
  ['Observations', 'Field observations'],
  ['Media', 'Images attached to observations'],
  ['Locations', 'Named places'],
  ['Visits', 'Field visits to locations'],
  ['CV jobs', 'Computer-vision model runs over observation images'],
  ['Webhook subscriptions', 'Webhook subscriptions and their delivery log'],
  ['Webhook events', 'What the service POSTs to subscribed URLs'],
  ['Event history', 'The event streams behind the resources'],
  ['Service', 'Health, and this documentation'],
].map(([name, text]) => ({ name: name!, description: text! }));

/** Every operation the document describes: the service's own, then each feature's. */
export const operations = (): BuiltOperation[] => [
  ...serviceOperations(),
  ...features.flatMap((feature) => feature.openapi.operations()),
];

/** How the access tokens follow RFC 8725, the JWT best current practices (src/auth/tokens.ts). */
const jwtPractices =
  'The tokens follow RFC8725 (JWT best current practices): signed with ES256 only, and verified with that ' +
  'one algorithm pinned (never `none`), the key chosen by `kid` among the JWKS, and the issuer, audience and ' +
  'expiry checked.';

export interface OpenApiOptions {
  /** PUBLIC_URL: the server, the issuer, and the base of the token URL. */
  publicUrl: string;
  version?: string;
}

export const openApiDocument = ({ publicUrl, version = '0.1.0' }: OpenApiOptions) => {
  const built = operations();
  const paths: Record<string, Record<string, unknown>> = {};
  const requestSchemas: Record<string, Schema> = {};
  for (const { method, path, operation, schemas } of built) {
    const item = (paths[path] ??= {});
    if (item[method]) throw new Error(`The OpenAPI document describes ${method} ${path} twice`);
    item[method] = operation;
    for (const [name, schema] of Object.entries(schemas)) {
      if (requestSchemas[name] && JSON.stringify(requestSchemas[name]) !== JSON.stringify(schema))
        throw new Error(`Two request schemas are named ${name}`);
      requestSchemas[name] = schema;
    }
  }
  const base = publicUrl.replace(/\/+$/, '');
  // A copy of its own: the schemas are the codecs' module-level objects, which a caller that changes its
  // document (a test adding an event type) would otherwise change for every document built after.
  return structuredClone({
    openapi: '3.1.0',
    // The dialect of every schema without a $schema of its own: 3.1 tools then read them as 2020-12.
    jsonSchemaDialect: 'https://json-schema.org/draft/2020-12/schema',
    info: {
      title: 'Observation service',
      version,
      description,
      contact: { name: 'Observation service operators' },
    },
    // Public: the API is meant for clients outside the operator's network (OWASP API9 asks to say so).
    servers: [{ url: base, description: 'This service (PUBLIC_URL)', 'x-internal': false }],
    tags,
    paths,
    webhooks: Object.fromEntries(
      features.flatMap((feature) => Object.entries(feature.openapi.webhooks?.() ?? {})),
    ),
    components: {
      schemas: {
        ...sharedSchemas,
        ...Object.fromEntries(features.flatMap((feature) => Object.entries(feature.openapi.schemas ?? {}))),
        ...requestSchemas,
      },
      parameters,
      headers,
      responses: responseComponents,
      securitySchemes: {
        apiKey: {
          type: 'apiKey',
          in: 'header',
          name: 'X-API-Key',
          description:
            "A tenant's API key (`obs_<tenantId>.<keyId>.<secret>`), created with `POST " +
            '/v1/tenants/{tenantId}/api-keys` and revoked with `DELETE`; or the platform administrator key, ' +
            'which only creates and reads tenants and gives them their first credentials.',
        },
        bearer: {
          type: 'http',
          scheme: 'bearer',
          bearerFormat: 'JWT',
          description:
            'An ES256 access token (15 minutes) from a user login (`POST /v1/auth/token`, renewed with ' +
            '`POST /v1/auth/refresh`) or from the OAuth token endpoint. Public keys at `/.well-known/jwks.json`. ' +
            jwtPractices,
        },
        oauth2: {
          type: 'oauth2',
          description:
            'OAuth 2.0 client credentials (RFC 6749 §4.4) for a client registered under ' +
            '`/v1/tenants/{tenantId}/oauth-clients`; discovery at `/.well-known/oauth-authorization-server`. ' +
            'The token is sent as `Authorization: Bearer`. ' +
            jwtPractices,
          flows: {
            clientCredentials: {
              tokenUrl: `${base}/v1/oauth/token`,
              scopes: Object.fromEntries(scopes.map((scope) => [scope, scopeDescriptions[scope]])),
            },
          },
        },
      },
    },
  });
};

export type OpenApiDocument = ReturnType<typeof openApiDocument>;
