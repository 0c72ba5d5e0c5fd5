import { plainText, strictObject } from '../http/codec.js';
import { Email } from '../credentials/codecs.js';

/** The request body of POST /v1/tenants (src/tenants/api.ts), described in src/tenants/openapi.ts. */
export const CreateTenantBody = strictObject('a tenant', {
  name: plainText(1, 200),
  notificationEmail: Email,
});
