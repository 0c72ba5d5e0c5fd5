import { CreateSecretCredentialBody, CreateUserBody } from './codecs.js';
import { exampleIds, fields, page } from '../openapi/components.js';
import { operation, type BuiltOperation } from '../openapi/operation.js';
import { createdResponse, pagingQuery } from '../openapi/resource.js';
import { dateTime, enumOf, nullable, object, ref, string, type Schema } from '../openapi/schema.js';

/** A tenant's users, API keys and OAuth clients: their schemas and operations. */

const credential = (prefix: string) => ({
  id: fields.id(prefix),
  tenantId: fields.tenantId,
  name: string({ minLength: 1, maxLength: 200 }),
  scopes: fields.scopes,
  status: enumOf(['active', 'revoked']),
  createdAt: dateTime(),
  revokedAt: nullable(dateTime()),
  version: fields.version,
});

export const credentialSchemas: Record<string, Schema> = {
  User: object(
    {
      id: string({ pattern: '^u_[0-9a-f]{26}$', description: 'Derived from the tenant and the e-mail' }),
      tenantId: fields.tenantId,
      email: fields.email,
      scopes: fields.scopes,
      status: enumOf(['active', 'disabled']),
      createdAt: dateTime(),
      disabledAt: nullable(dateTime()),
      version: fields.version,
    },
    {},
    { description: 'A user who logs in with an e-mail and a password; the password is never returned' },
  ),
  ApiKey: object(credential('k'), {}, { description: 'An API key, without its secret' }),
  CreatedApiKey: object(
    {
      ...credential('k'),
      key: string({ pattern: '^obs_', description: 'The key for `X-API-Key`, shown once' }),
    },
    {},
    { description: 'The new API key, with the key itself' },
  ),
  OAuthClient: object(credential('c'), {}, { description: 'An OAuth client, without its secret' }),
  CreatedOAuthClient: object(
    {
      ...credential('c'),
      clientId: string({ description: 'The `client_id` for the token endpoint' }),
      clientSecret: string({ description: 'The `client_secret`, shown once' }),
    },
    {},
    { description: 'The new OAuth client, with its credentials' },
  ),
};

const secretCredentialOperations = (
  path: 'api-keys' | 'oauth-clients',
  names: { one: string; schema: string; tag: string; id: string; example: string },
): BuiltOperation[] => {
  const base = `/v1/tenants/:tenantId/${path}`;
  const byId = { id: { description: `The ${names.one}'s id`, example: names.example } };
  return [
    operation({
      method: 'post',
      path: base,
      operationId: `create${names.id}`,
      summary: `Create an ${names.one}`,
      description: 'The secret is shown in this answer only. The platform key may create the first ones.',
      tag: names.tag,
      access: { scope: 'admin', platform: true },
      body: {
        codec: CreateSecretCredentialBody,
        name: 'CreateCredentialRequest',
        example: { name: 'Field app', scopes: ['observations:read', 'observations:write'] },
        mediaTypes: ['application/json'],
        json: true,
      },
      responses: { '201': createdResponse(`Created${names.schema}`, 'Created') },
    }),
    operation({
      method: 'get',
      path: base,
      operationId: `list${names.id}s`,
      summary: `List ${names.one}s`,
      description: 'Oldest first.',
      tag: names.tag,
      access: { scope: 'admin' },
      query: pagingQuery,
      responses: {
        '200': { description: 'A page', content: { 'application/json': page(ref(names.schema), 'A page') } },
      },
    }),
    operation({
      method: 'get',
      path: `${base}/:id`,
      operationId: `get${names.id}`,
      summary: `Read an ${names.one}`,
      tag: names.tag,
      access: { scope: 'admin' },
      pathParameters: byId,
      headers: ['IfNoneMatch'],
      responses: {
        '200': {
          description: 'The record',
          headers: ['ETag'],
          content: { 'application/json': ref(names.schema) },
        },
        '304': { description: 'Not modified', headers: ['ETag'] },
      },
    }),
    operation({
      method: 'delete',
      path: `${base}/:id`,
      operationId: `revoke${names.id}`,
      summary: `Revoke an ${names.one}`,
      description: 'It stops working at once; revoking is for good.',
      tag: names.tag,
      access: { scope: 'admin' },
      pathParameters: byId,
      responses: { '204': { description: 'Revoked', headers: ['X-Position'] } },
    }),
  ];
};

const userId = { id: { description: "The user's id", example: exampleIds.user } };

export const credentialOperations = (): BuiltOperation[] => [
  operation({
    method: 'post',
    path: '/v1/tenants/:tenantId/users',
    operationId: 'createUser',
    summary: 'Create a user',
    description: 'E-mails are unique within a tenant; the password is stored as a salted scrypt hash.',
    tag: 'Users',
    access: { scope: 'admin', platform: true },
    body: {
      codec: CreateUserBody,
      name: 'CreateUserRequest',
      example: {
        email: 'ada@acme.test',
        password: 'correct horse battery staple',
        scopes: ['observations:read', 'observations:write'],
      },
      mediaTypes: ['application/json'],
      json: true,
    },
    responses: { '201': createdResponse('User', 'Created') },
  }),
  operation({
    method: 'get',
    path: '/v1/tenants/:tenantId/users',
    operationId: 'listUsers',
    summary: 'List users',
    description: 'Oldest first.',
    tag: 'Users',
    access: { scope: 'admin' },
    query: pagingQuery,
    responses: {
      '200': { description: 'A page', content: { 'application/json': page(ref('User'), 'A page') } },
    },
  }),
  operation({
    method: 'get',
    path: '/v1/tenants/:tenantId/users/:id',
    operationId: 'getUser',
    summary: 'Read a user',
    tag: 'Users',
    access: { scope: 'admin' },
    pathParameters: userId,
    headers: ['IfNoneMatch'],
    responses: {
      '200': { description: 'The user', headers: ['ETag'], content: { 'application/json': ref('User') } },
      '304': { description: 'Not modified', headers: ['ETag'] },
    },
  }),
  operation({
    method: 'post',
    path: '/v1/tenants/:tenantId/users/:id/disable',
    operationId: 'disableUser',
    summary: 'Disable a user',
    description: "The user's tokens and sessions stop working.",
    tag: 'Users',
    access: { scope: 'admin' },
    pathParameters: userId,
    responses: {
      '200': {
        description: 'The disabled user',
        headers: ['ETag', 'X-Position'],
        content: { 'application/json': ref('User') },
      },
    },
  }),
  ...secretCredentialOperations('api-keys', {
    one: 'API key',
    schema: 'ApiKey',
    tag: 'API keys',
    id: 'ApiKey',
    example: exampleIds.apiKey,
  }),
  ...secretCredentialOperations('oauth-clients', {
    one: 'OAuth client',
    schema: 'OAuthClient',
    tag: 'OAuth clients',
    id: 'OAuthClient',
    example: exampleIds.oauthClient,
  }),
];
