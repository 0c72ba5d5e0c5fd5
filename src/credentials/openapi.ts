import * as t from 'io-ts';
import { component, described, strictObject } from '../http/codec.js';
import {
  CreateSecretCredentialBody,
  CreateUserBody,
  secretCredentialFields,
  shownOnce,
  UserCodec,
} from './codecs.js';
import { exampleIds, page } from '../openapi/components.js';
import { operation, type BuiltOperation } from '../openapi/operation.js';
import { changedResponse, createdResponse, pageResponse, pagingQuery } from '../openapi/resource.js';
import { componentSchema, ref, type Schema } from '../openapi/schema.js';

/** A tenant's users, API keys and OAuth clients: their schemas and operations. */

/** An API key or an OAuth client as a resource, with what its creation alone shows. */
const credential = (
  name: string,
  prefix: string,
  description: string,
  shown: { description: string; fields: Record<string, t.Mixed> },
) => ({
  [name]: componentSchema(
    component(name, described(strictObject(name, secretCredentialFields(prefix)), { description })),
  ),
  [`Created${name}`]: componentSchema(
    component(
      `Created${name}`,
      described(strictObject(name, { ...secretCredentialFields(prefix), ...shown.fields }), {
        description: shown.description,
      }),
    ),
  ),
});

export const credentialSchemas: Record<string, Schema> = {
  User: componentSchema(UserCodec),
  ...credential('ApiKey', 'k', 'An API key, without its secret', {
    description: 'The new API key, with the key itself',
    fields: { key: shownOnce('obs_', 'The key for `X-API-Key`, shown once') },
  }),
  ...credential('OAuthClient', 'c', 'An OAuth client, without its secret', {
    description: 'The new OAuth client, with its credentials',
    fields: {
      clientId: described(t.string, { description: 'The `client_id` for the token endpoint' }),
      clientSecret: described(t.string, { description: 'The `client_secret`, shown once' }),
    },
  }),
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
      '200': pageResponse('User', 'A page'),
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
      '200': changedResponse('User', 'The disabled user'),
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
