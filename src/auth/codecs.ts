import { tenantIdPattern } from '../core/ids.js';
import { boundedString, described, secretText, strictObject } from '../http/codec.js';
import { Email } from '../credentials/codecs.js';

/** The request bodies of the login routes (src/auth/login.api.ts), described in src/auth/openapi.ts. */

/**
 * A login, with or without its tenant. E-mails are unique within a tenant only: without `tenantId` the
 * login is for the one account of the e-mail the password opens (src/auth/login.api.ts).
 */
export const LoginBody = strictObject(
  'a login',
  { email: Email, password: secretText(1, 1024) },
  {
    // Any short string decodes, and an unknown tenant gets the same 401 as a wrong password; the document
    // still shows the form of a real tenant id, which is all a client should send.
    tenantId: described(boundedString(1, 64), {
      maxLength: 42,
      pattern: tenantIdPattern.source,
      examples: ['t_01m7xr44nde6cpe35md841agpz'],
      description: 'The tenant of the account, needed only when the password opens accounts in several',
    }),
  },
);
// As long as any credential authenticate.ts reads: a too-long or wrong-kind token (an access token sent
// here) is then refused as invalid with 401, like any other bad refresh token, not as a malformed body.
export const RefreshBody = strictObject('a refresh request', {
  refreshToken: described(secretText(1, 4096), { pattern: '^ort_' }),
});
