import { boundedString, strictObject } from '../http/codec.js';
import { Email } from '../credentials/codecs.js';

/** The request bodies of the login routes (src/auth/login.api.ts), described in src/auth/openapi.ts. */

/**
 * A login, with or without its tenant. E-mails are unique within a tenant only: without `tenantId` the
 * login is for the one account of the e-mail the password opens (src/auth/login.api.ts).
 */
export const LoginBody = strictObject(
  'a login',
  { email: Email, password: boundedString(1, 1024) },
  { tenantId: boundedString(1, 64) },
);
// As long as any credential authenticate.ts reads: a too-long or wrong-kind token (an access token sent
// here) is then refused as invalid with 401, like any other bad refresh token, not as a malformed body.
export const RefreshBody = strictObject('a refresh request', { refreshToken: boundedString(1, 4096) });
