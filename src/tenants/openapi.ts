import { CreateTenantBody } from './codecs.js';
import { fields, page } from '../openapi/components.js';
import { operation, type BuiltOperation } from '../openapi/operation.js';
import { createdResponse, pagingQuery } from '../openapi/resource.js';
import { dateTime, object, ref, string, type Schema } from '../openapi/schema.js';

/** Tenants: their schemas and operations (their users and credentials: src/credentials). */

const tenant = {
  id: fields.tenantId,
  name: string({ minLength: 1, maxLength: 200 }),
  notificationEmail: fields.email,
  createdAt: dateTime(),
  version: fields.version,
};

export const tenantSchemas: Record<string, Schema> = {
  Tenant: object(tenant, {}, { description: 'A tenant: every resource and credential belongs to one' }),
  CreatedTenant: object(
    {
      ...tenant,
      adminApiKey: string({ pattern: '^obs_', description: "The tenant's first admin API key, shown once" }),
    },
    {},
    { description: 'The new tenant, with its first admin API key' },
  ),
};

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
      '200': { description: 'A page', content: { 'application/json': page(ref('Tenant'), 'A page') } },
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
