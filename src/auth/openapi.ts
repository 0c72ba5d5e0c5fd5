import { LoginBody, RefreshBody } from './codecs.js';
import { scopes } from '../core/scopes.js';
import { exampleIds, fields } from '../openapi/components.js';
import { operation, type BuiltOperation } from '../openapi/operation.js';
import { arrayOf, dateTime, enumOf, integer, object, ref, string, type Schema } from '../openapi/schema.js';

/** Login, refresh, the OAuth 2.0 token endpoint and the discovery documents. */

export const authSchemas: Record<string, Schema> = {
  LoginTokens: object(
    {
      accessToken: string({ description: 'An ES256 JWT for `Authorization: Bearer`' }),
      refreshToken: string({ pattern: '^ort_', description: 'Single use: every refresh answers a new one' }),
      tokenType: { type: 'string', const: 'Bearer' },
      expiresIn: integer(1, undefined, { description: 'Seconds until the access token expires' }),
    },
    {},
    { description: 'A login session: an access token and the refresh token that renews it.' },
  ),
  OAuthTokenRequest: object(
    {
      grant_type: string({ enum: ['client_credentials'], description: 'Only `client_credentials`' }),
    },
    {
      scope: string({
        maxLength: 1000,
        pattern: '^[a-z:]+( [a-z:]+)*$',
        description:
          'Space-separated scopes the client holds (a client with `admin` may ask for any narrower scope); ' +
          "all of the client's scopes by default",
        examples: ['observations:read'],
      }),
      client_id: string({
        maxLength: 100,
        pattern: '^t_[0-9a-z]{1,40}\\.c_[0-9a-z]{26}$',
        description: 'With `client_secret`, instead of HTTP Basic',
        examples: ['t_01m7xr44nde6cpe35md841agpz.c_01m7xr9qk2c6q1xw4zq0d8a7bn'],
      }),
      client_secret: fields.secret(1, 200),
    },
    {
      description:
        'RFC 6749 §4.4. The client authenticates with HTTP Basic (`client_id:client_secret`, each ' +
        'form-urlencoded) or with `client_id` and `client_secret` in the body, not both.',
    },
  ),
  OAuthToken: object(
    {
      access_token: string({ description: 'An ES256 JWT for `Authorization: Bearer`' }),
      token_type: { type: 'string', const: 'Bearer' },
      expires_in: integer(1),
      scope: string({ description: 'The granted scopes, space-separated' }),
    },
    {},
    { description: 'RFC 6749 §5.1' },
  ),
  OAuthError: object(
    {
      error: enumOf(['invalid_request', 'invalid_client', 'invalid_scope', 'unsupported_grant_type']),
      error_description: string(),
      type: string({ pattern: '^/problems/oauth-[a-z-]+$' }),
      title: string(),
      status: integer(400, 401),
      requestId: string(),
    },
    {},
    {
      description:
        'RFC 6749 §5.2, as `application/json`: OAuth clients look for `error`. The problem members ride along.',
    },
  ),
  JsonWebKeySet: object(
    {
      keys: arrayOf(
        object(
          {
            kty: { type: 'string', const: 'EC' },
            crv: { type: 'string', const: 'P-256' },
            x: string(),
            y: string(),
            kid: string(),
            alg: { type: 'string', const: 'ES256' },
            use: { type: 'string', const: 'sig' },
          },
          { retiredAt: dateTime('Digest keys only: when the key stopped signing') },
        ),
      ),
    },
    {},
    {
      description:
        'The public keys, by `kid` (RFC 7517), that verify access tokens (`jwks.json`: active keys) or audit ' +
        'digests (`digest-keys.json`: retired keys too)',
    },
  ),
  AuthorizationServerMetadata: object(
    {
      issuer: string({ format: 'uri' }),
      token_endpoint: string({ format: 'uri' }),
      jwks_uri: string({ format: 'uri' }),
      grant_types_supported: arrayOf({ type: 'string', const: 'client_credentials' }),
      token_endpoint_auth_methods_supported: arrayOf(enumOf(['client_secret_basic', 'client_secret_post'])),
      scopes_supported: arrayOf(enumOf(scopes)),
      service_documentation: string({ format: 'uri' }),
    },
    {},
    {
      description:
        'RFC 8414 authorization server metadata. There is no authorization endpoint, so no ' +
        '`response_types_supported` (§3.2: no empty arrays). Its URLs are built from PUBLIC_URL, the issuer: ' +
        'discovery works for clients that reach the service at that URL.',
    },
  ),
};

const tag = 'Tokens';

/** What src/credentials/credential-strings.ts makes: the tenant and id before the secret. */
const exampleClientId = `${exampleIds.tenant}.${exampleIds.oauthClient}`;
const exampleClientSecret = 'q7B2xN0vKc9RzL4mT1wYhE6uP3sA8dFgJ5kVnXoZbQe';
const exampleRefreshToken = `ort_${exampleIds.tenant}.s_01m7xrc4d6f8g0h2j4k6m8n0p2.Zx8Qm3Lp0Rt5Vw2Yb7Nc4Hd9Kf1Gs6Ja3Ue8Io0Pq2x`;

/** The body of the refresh and the sign-out: one refresh token. */
const refreshTokenBody = (name: string) => ({
  codec: RefreshBody,
  name,
  example: { refreshToken: exampleRefreshToken },
  mediaTypes: ['application/json'],
  json: true,
});

export const authOperations = (): BuiltOperation[] => [
  operation({
    method: 'post',
    path: '/v1/auth/token',
    operationId: 'login',
    summary: 'Log a user in',
    description:
      'Checks the e-mail and password and starts a session: a 15-minute access token and a single-use ' +
      'refresh token. Without `tenantId` the login is for the account of the e-mail that the password ' +
      'opens, in whichever tenant it is; with it, for the account in that tenant only. An unknown tenant or ' +
      'e-mail, a wrong password and a disabled user all get the same 401, in the same time, whether or not ' +
      'the e-mail has an account in another tenant. A password that opens accounts in several tenants gets ' +
      '400 asking for `tenantId`. Failed logins are limited per e-mail and client address (5), per e-mail ' +
      '(20, and 100 a day) and per client address (200), in 15 minutes; over a limit, 429 with `Retry-After`.',
    tag,
    access: { public: true },
    body: {
      codec: LoginBody,
      name: 'LoginRequest',
      example: { email: 'ada@acme.test', password: 'correct horse battery staple' },
      mediaTypes: ['application/json'],
      json: true,
    },
    responses: {
      '200': { description: 'Logged in', content: { 'application/json': ref('LoginTokens') } },
    },
    problems: ['401'],
  }),
  operation({
    method: 'post',
    path: '/v1/auth/refresh',
    operationId: 'refreshLogin',
    summary: 'Renew an access token',
    description:
      'Exchanges a refresh token for a new pair. A refresh token that was already used revokes its whole ' +
      'session (RFC 9700 §4.14.2).',
    tag,
    access: { public: true },
    body: refreshTokenBody('RefreshRequest'),
    responses: {
      '200': { description: 'A new pair', content: { 'application/json': ref('LoginTokens') } },
    },
    problems: ['401'],
  }),
  operation({
    method: 'post',
    path: '/v1/auth/logout',
    operationId: 'logout',
    summary: 'Sign out',
    description:
      "Ends the refresh token's session: the token and every other of its family stop working, and so do " +
      "the session's access tokens. As for token revocation (RFC 7009 §2.2), a token that ends nothing " +
      '(unknown, or of a session already ended) gets the same 204.',
    tag,
    access: { public: true },
    body: refreshTokenBody('LogoutRequest'),
    responses: { '204': { description: 'Signed out, or nothing to end' } },
  }),
  operation({
    method: 'post',
    path: '/v1/oauth/token',
    operationId: 'oauthToken',
    summary: 'Get a client-credentials access token',
    description:
      'OAuth 2.0 client credentials (RFC 6749 §4.4). Errors are RFC 6749 §5.2 JSON, the one exception to ' +
      'problem+json; `invalid_client` comes with `WWW-Authenticate: Basic`. Failed client authentications ' +
      'are limited per client id and address (10) and per address (200) in 15 minutes; over a limit, a 429 ' +
      'problem with `Retry-After`.',
    tag,
    access: { public: true },
    body: {
      schema: ref('OAuthTokenRequest'),
      mediaTypes: ['application/x-www-form-urlencoded'],
      example: {
        grant_type: 'client_credentials',
        client_id: exampleClientId,
        client_secret: exampleClientSecret,
        scope: 'observations:read',
      },
    },
    responses: {
      '200': { description: 'A token', content: { 'application/json': ref('OAuthToken') } },
      '400': {
        description:
          '`invalid_request`, `invalid_scope` or `unsupported_grant_type`; a query parameter the endpoint ' +
          'does not take gets a problem document',
        content: { 'application/json': ref('OAuthError'), 'application/problem+json': ref('Problem') },
      },
      '401': {
        description: '`invalid_client`',
        headers: ['WWW-Authenticate'],
        content: { 'application/json': ref('OAuthError') },
      },
    },
    problems: ['413'],
  }),
  operation({
    method: 'get',
    path: '/.well-known/jwks.json',
    operationId: 'jwks',
    summary: 'The token signing keys',
    tag,
    access: { public: true },
    responses: {
      '200': { description: 'The JWKS', content: { 'application/json': ref('JsonWebKeySet') } },
    },
  }),
  operation({
    method: 'get',
    path: '/.well-known/oauth-authorization-server',
    operationId: 'authorizationServerMetadata',
    summary: 'OAuth discovery',
    tag,
    access: { public: true },
    responses: {
      '200': {
        description: 'The metadata',
        content: { 'application/json': ref('AuthorizationServerMetadata') },
      },
    },
  }),
];
