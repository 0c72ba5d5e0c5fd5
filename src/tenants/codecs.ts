import type * as t from 'io-ts';
import { component, DateTimeString, described, plainText, strictObject } from '../http/codec.js';
import { StreamVersion, TenantIdString, typesAgree } from '../http/resource-fields.js';
import { Email, shownOnce } from '../credentials/codecs.js';
import type { Tenant } from './decider.js';

/** The request body of POST /v1/tenants (src/tenants/api.ts), and the tenant as clients read it. */
export const CreateTenantBody = strictObject('a tenant', {
  name: plainText(1, 200),
  notificationEmail: Email,
});

const tenantFields = {
  id: TenantIdString,
  ...CreateTenantBody.fields,
  createdAt: DateTimeString,
  version: StreamVersion,
};

export const TenantCodec = component(
  'Tenant',
  described(strictObject('a tenant', tenantFields), {
    description: 'A tenant: every resource and credential belongs to one',
  }),
);

typesAgree<Tenant, t.TypeOf<typeof TenantCodec>>(true);

export const CreatedTenantCodec = component(
  'CreatedTenant',
  described(
    strictObject('a new tenant', {
      ...tenantFields,
      adminApiKey: shownOnce('obs_', "The tenant's first admin API key, shown once"),
    }),
    { description: 'The new tenant, with its first admin API key' },
  ),
);
