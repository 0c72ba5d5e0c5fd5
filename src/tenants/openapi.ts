import { CreatedTenantCodec, CreateTenantBody, TenantCodec } from './codecs.js';
import {} from '../openapi/components.js';
import { operation, type BuiltOperation } from '../openapi/operation.js';
import { createdResponse, pageResponse, pagingQuery } from '../openapi/resource.js';
import { componentSchemas, ref, type Schema } from '../openapi/schema.js';

/** Tenants: their schemas and operations (their users and credentials: src/credentials). */

export const tenantSchemas: Record<string, Schema> = componentSchemas([TenantCodec, CreatedTenantCodec]);

export const tenantOperations = (): BuiltOperation[] => [
  operation({
    method: 'post',
    path: '/v1/tenants',
    operationId: 'createTenant',
    summary: 'Create a tenant',
    description: 'Answers the tenant with its first admin API key, shown once.',
    tag: 'Tenants',
    access: { platformOnly: true },
    body: {
      codec: CreateTenantBody,
      name: 'CreateTenantRequest',
      example: { name: 'Acme field team', notificationEmail: 'ops@acme.test' },
      mediaTypes: ['application/json'],
      json: true,
    },
    responses: { '201': createdResponse('CreatedTenant', 'Created') },
  }),
  operation({
    method: 'get',
    path: '/v1/tenants',
    operationId: 'listTenants',
    summary: 'List tenants',
    description: 'Oldest first.',
    tag: 'Tenants',
    access: { platformOnly: true },
    query: pagingQuery,
    responses: {
      '200': pageResponse('Tenant', 'A page'),
    },
  }),
  operation({
    method: 'get',
    path: '/v1/tenants/:tenantId',
    operationId: 'getTenant',
    summary: 'Read a tenant',
    tag: 'Tenants',
    access: { scope: 'admin', platform: true },
    headers: ['IfNoneMatch'],
    responses: {
      '200': { description: 'The tenant', headers: ['ETag'], content: { 'application/json': ref('Tenant') } },
      '304': { description: 'Not modified', headers: ['ETag'] },
    },
  }),
];
