import { expect } from 'chai';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { SigningKey } from '../../src/auth/signing-keys.js';
import { request, type TestServer } from './server.js';

type Response = Awaited<ReturnType<typeof request>>;

/** The development keyring of a test server: the private keys are what lets a test forge tokens. */
export const signingKeysFile = (server: TestServer): string => join(server.dataDir, 'signing-keys.json');

export const readSigningKeys = (server: TestServer): SigningKey[] =>
  (JSON.parse(readFileSync(signingKeysFile(server), 'utf8')) as { keys: SigningKey[] }).keys;

/** Polls until the check passes or the time is up; the last failure is the test's failure. */
export const eventually = async <T>(check: () => Promise<T>, { timeoutMs = 2000, everyMs = 20 } = {}) => {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      return await check();
    } catch (error) {
      if (Date.now() > deadline) throw error;
      await new Promise((resolve) => setTimeout(resolve, everyMs));
    }
  }
};

export const expectUnauthorized = (response: Response, message = '') => {
  expect(response.status, `${message} ${JSON.stringify(response.body)}`).to.equal(401);
  expect(response.headers.get('www-authenticate'), message).to.match(/^Bearer realm=/);
  expect(response.headers.get('content-type'), message).to.match(/^application\/problem\+json/);
  expect(response.body.type, message).to.equal('/problems/unauthorized');
};

export const expectForbidden = (response: Response, scope: string | undefined, message = '') => {
  expect(response.status, `${message} ${JSON.stringify(response.body)}`).to.equal(403);
  expect(response.body.type, message).to.equal('/problems/forbidden');
  if (scope) expect(response.body.requiredScope, message).to.equal(scope);
};

/** The parts of a problem that do not change from one request to the next. */
export const problemShape = (response: Response) => {
  const { requestId: _requestId, instance: _instance, ...rest } = response.body as Record<string, unknown>;
  return { status: response.status, wwwAuthenticate: response.headers.get('www-authenticate'), ...rest };
};

export const bearer = (token: string) => ({ Authorization: `Bearer ${token}` });

export const password = 'correct horse battery staple';

/** A user of the tenant, created with the tenant's admin key. */
export const createUser = async (
  server: TestServer,
  tenant: { tenantId: string; adminKey: string },
  { email, scopes, secret = password }: { email: string; scopes: string[]; secret?: string },
) => {
  const response = await request(`${server.url}/v1/tenants/${tenant.tenantId}/users`, {
    method: 'POST',
    body: { email, password: secret, scopes },
    headers: { 'X-API-Key': tenant.adminKey },
  });
  if (response.status !== 201) throw new Error(`user: ${response.status} ${JSON.stringify(response.body)}`);
  return response.body as { id: string; email: string; tenantId: string; scopes: string[] };
};

export const login = (server: TestServer, body: Record<string, unknown>) =>
  request(`${server.url}/v1/auth/token`, { method: 'POST', body });

export const refresh = (server: TestServer, refreshToken: string) =>
  request(`${server.url}/v1/auth/refresh`, { method: 'POST', body: { refreshToken } });

/** A user with these scopes, logged in: the token pair of a fresh session. */
export const loggedIn = async (
  server: TestServer,
  tenant: { tenantId: string; adminKey: string },
  scopes: string[],
  email = `user-${Math.random().toString(36).slice(2)}@example.test`,
) => {
  const user = await createUser(server, tenant, { email, scopes });
  const response = await login(server, { email, password, tenantId: tenant.tenantId });
  if (response.status !== 200) throw new Error(`login: ${response.status} ${JSON.stringify(response.body)}`);
  return {
    user,
    accessToken: response.body.accessToken as string,
    refreshToken: response.body.refreshToken as string,
  };
};

/** An OAuth client of the tenant, registered with its admin key. */
export const createOAuthClient = async (
  server: TestServer,
  tenant: { tenantId: string; adminKey: string },
  scopes: string[],
) => {
  const response = await request(`${server.url}/v1/tenants/${tenant.tenantId}/oauth-clients`, {
    method: 'POST',
    body: { name: 'worker', scopes },
    headers: { 'X-API-Key': tenant.adminKey },
  });
  if (response.status !== 201) throw new Error(`client: ${response.status} ${JSON.stringify(response.body)}`);
  return response.body as { id: string; clientId: string; clientSecret: string };
};

/** A form-urlencoded POST to the client-credentials token endpoint. */
export const oauthToken = (
  server: TestServer,
  form: Record<string, string>,
  headers: Record<string, string> = {},
) =>
  request(`${server.url}/v1/oauth/token`, {
    method: 'POST',
    rawBody: new URLSearchParams(form).toString(),
    headers: { 'content-type': 'application/x-www-form-urlencoded', ...headers },
  });

export const basicAuth = (id: string, secret: string) => ({
  Authorization: `Basic ${Buffer.from(`${encodeURIComponent(id)}:${encodeURIComponent(secret)}`).toString('base64')}`,
});

/** A client-credentials access token with these scopes (the client's own, or a subset). */
export const clientToken = async (
  server: TestServer,
  tenant: { tenantId: string; adminKey: string },
  scopes: string[],
) => {
  const client = await createOAuthClient(server, tenant, scopes);
  const response = await oauthToken(
    server,
    { grant_type: 'client_credentials' },
    basicAuth(client.clientId, client.clientSecret),
  );
  if (response.status !== 200) throw new Error(`token: ${response.status} ${JSON.stringify(response.body)}`);
  return { client, accessToken: response.body.access_token as string };
};

/** Splits a JWT without verifying it. */
export const decodeJwt = (token: string) => {
  const [header, payload] = token.split('.');
  return {
    header: JSON.parse(Buffer.from(header!, 'base64url').toString()) as Record<string, unknown>,
    payload: JSON.parse(Buffer.from(payload!, 'base64url').toString()) as Record<string, unknown>,
  };
};
