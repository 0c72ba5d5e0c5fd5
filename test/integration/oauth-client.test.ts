import { expect } from 'chai';
import * as client from 'openid-client';
import {
  basicAuth,
  bearer,
  createOAuthClient,
  decodeJwt,
  expectUnauthorized,
  oauthToken,
} from '../support/auth.js';
import { request, startTestServer, withTenant, type TestServer } from '../support/server.js';
import { rejectionOf } from '../support/rejections.js';

type Tenant = Awaited<ReturnType<typeof withTenant>>;
type Response = Awaited<ReturnType<typeof request>>;

/** RFC 6749 §5.2: JSON with `error`, deliberately not a problem document, and never cached. */
const expectOAuthError = (response: Response, status: number, error: string) => {
  expect(response.status, JSON.stringify(response.body)).to.equal(status);
  expect(response.headers.get('content-type')).to.match(/^application\/json/);
  expect(response.headers.get('cache-control')).to.equal('no-store');
  expect(response.body.error).to.equal(error);
  expect(response.body.error_description).to.be.a('string');
};

describe('OAuth 2.0 client credentials', () => {
  let server: TestServer;
  let tenant: Tenant;
  let worker: { id: string; clientId: string; clientSecret: string };
  const observations = () => `${server.url}/v1/tenants/${tenant.tenantId}/observations`;

  beforeEach(async () => {
    server = await startTestServer();
    tenant = await withTenant(server);
    worker = await createOAuthClient(server, tenant, ['observations:read', 'observations:write']);
  });
  afterEach(async () => server.close());

  describe('the token endpoint (RFC 6749 §4.4)', () => {
    it('issues a bearer token with the client’s scopes to a client authenticated with HTTP Basic', async () => {
      const response = await oauthToken(
        server,
        { grant_type: 'client_credentials' },
        basicAuth(worker.clientId, worker.clientSecret),
      );
      expect(response.status, JSON.stringify(response.body)).to.equal(200);
      expect(response.headers.get('content-type')).to.match(/^application\/json/);
      expect(response.headers.get('cache-control')).to.equal('no-store');
      expect(response.headers.get('pragma')).to.equal('no-cache');
      expect(response.body).to.deep.equal({
        access_token: response.body.access_token,
        token_type: 'Bearer',
        expires_in: 900,
        scope: 'observations:read observations:write',
      });
      const { header, payload } = decodeJwt(response.body.access_token as string);
      expect(header.alg).to.equal('ES256');
      expect(payload).to.include({
        sub: `client:${worker.id}`,
        tenantId: tenant.tenantId,
        iss: server.url,
        aud: 'observation-service',
      });
      expect(payload).not.to.have.property('sid');
      expect(
        (await request(observations(), { headers: bearer(response.body.access_token) })).status,
      ).to.equal(200);
    });

    it('accepts the client credentials in the form body instead (client_secret_post)', async () => {
      const response = await oauthToken(server, {
        grant_type: 'client_credentials',
        client_id: worker.clientId,
        client_secret: worker.clientSecret,
      });
      expect(response.status).to.equal(200);
    });

    it('narrows the token to a requested subset of the client’s scopes', async () => {
      const response = await oauthToken(
        server,
        { grant_type: 'client_credentials', scope: 'observations:read  observations:read' },
        basicAuth(worker.clientId, worker.clientSecret),
      );
      expect(response.status).to.equal(200);
      expect(response.body.scope).to.equal('observations:read');
      expect(decodeJwt(response.body.access_token as string).payload.scope).to.equal('observations:read');
      const write = await request(observations(), {
        method: 'POST',
        body: { observedAt: '2026-05-01T09:30:00Z' },
        headers: bearer(response.body.access_token),
      });
      expect(write.status).to.equal(403);
      expect(write.body.requiredScope).to.equal('observations:write');
    });

    it('lets an admin client ask for a narrower token, since admin implies every scope', async () => {
      const admin = await createOAuthClient(server, tenant, ['admin']);
      const response = await oauthToken(
        server,
        { grant_type: 'client_credentials', scope: 'observations:read' },
        basicAuth(admin.clientId, admin.clientSecret),
      );
      expect(response.status, JSON.stringify(response.body)).to.equal(200);
      expect(response.body.scope).to.equal('observations:read');
      const users = await request(`${server.url}/v1/tenants/${tenant.tenantId}/users`, {
        headers: bearer(response.body.access_token),
      });
      expect(users.status).to.equal(403);
    });

    it('answers invalid_scope with 400 to a scope outside the client’s, to an unknown scope and to an empty one', async () => {
      for (const scope of ['observations:read admin', 'cv:read', 'root', '']) {
        const response = await oauthToken(
          server,
          { grant_type: 'client_credentials', scope },
          basicAuth(worker.clientId, worker.clientSecret),
        );
        expectOAuthError(response, 400, 'invalid_scope');
      }
    });

    it('answers invalid_client with 401 and WWW-Authenticate to a wrong secret, an unknown client and a malformed id', async () => {
      const otherSecret = (await createOAuthClient(server, tenant, ['cv:read'])).clientSecret;
      const attempts: Record<string, string>[] = [
        basicAuth(worker.clientId, otherSecret),
        basicAuth(worker.clientId, ''),
        basicAuth(`${tenant.tenantId}.c_${'0'.repeat(26)}`, worker.clientSecret),
        basicAuth('not-a-client-id', worker.clientSecret),
        { Authorization: `Basic ${Buffer.from('no colon here').toString('base64')}` },
        { Authorization: 'Basic %%%' },
      ];
      for (const headers of attempts) {
        const response = await oauthToken(server, { grant_type: 'client_credentials' }, headers);
        expectOAuthError(response, 401, 'invalid_client');
        expect(response.headers.get('www-authenticate')).to.match(/^Basic realm=/);
      }
      const inBody = await oauthToken(server, {
        grant_type: 'client_credentials',
        client_id: worker.clientId,
        client_secret: otherSecret,
      });
      expectOAuthError(inBody, 401, 'invalid_client');
      expectOAuthError(await oauthToken(server, { grant_type: 'client_credentials' }), 401, 'invalid_client');
    });

    it('answers unsupported_grant_type with 400 to any other grant, and invalid_request to none', async () => {
      for (const grant of ['password', 'authorization_code', 'refresh_token']) {
        const response = await oauthToken(
          server,
          { grant_type: grant, username: 'a', password: 'b' },
          basicAuth(worker.clientId, worker.clientSecret),
        );
        expectOAuthError(response, 400, 'unsupported_grant_type');
      }
      expectOAuthError(
        await oauthToken(server, {}, basicAuth(worker.clientId, worker.clientSecret)),
        400,
        'invalid_request',
      );
    });

    it('answers invalid_request to a JSON body, and to credentials sent both ways at once', async () => {
      const json = await request(`${server.url}/v1/oauth/token`, {
        method: 'POST',
        body: {
          grant_type: 'client_credentials',
          client_id: worker.clientId,
          client_secret: worker.clientSecret,
        },
      });
      expectOAuthError(json, 400, 'invalid_request');
      const both = await oauthToken(
        server,
        { grant_type: 'client_credentials', client_id: worker.clientId, client_secret: worker.clientSecret },
        basicAuth(worker.clientId, worker.clientSecret),
      );
      expectOAuthError(both, 400, 'invalid_request');
    });

    it('issues tokens to many simultaneous requests of one client, each of them', async () => {
      const answers = await Promise.all(
        Array.from({ length: 8 }, () =>
          oauthToken(
            server,
            { grant_type: 'client_credentials' },
            basicAuth(worker.clientId, worker.clientSecret),
          ),
        ),
      );
      expect(answers.map((answer) => answer.status)).to.deep.equal(Array(8).fill(200));
      expect(new Set(answers.map((answer) => answer.body.access_token)).size).to.equal(8);
      // Each token is on the record, in the client's audit stream, with the jti it carries.
      const [tenantId, id] = worker.clientId.split('.') as [string, string];
      const audit = await server.stores.eventStore.readStream(`oauthtoken-${tenantId}_${id}`);
      const jtis = answers.map(
        (answer) =>
          JSON.parse(Buffer.from(String(answer.body.access_token).split('.')[1]!, 'base64url').toString())
            .jti,
      );
      expect(audit.map((event) => event.type)).to.deep.equal(Array(8).fill('OAuthTokenIssued'));
      expect(audit.map((event) => (event.data as { jti: string }).jti).sort()).to.deep.equal(jtis.sort());
      expect(audit[0]?.metadata.actor).to.equal(`client:${id}`);
    });

    it('does not accept a client-credentials token whose client was revoked, within a second', async () => {
      const token = await oauthToken(
        server,
        { grant_type: 'client_credentials' },
        basicAuth(worker.clientId, worker.clientSecret),
      );
      const revoked = await request(
        `${server.url}/v1/tenants/${tenant.tenantId}/oauth-clients/${worker.id}`,
        {
          method: 'DELETE',
          headers: { 'X-API-Key': tenant.adminKey },
        },
      );
      expect(revoked.status).to.equal(204);
      const deadline = Date.now() + 1000;
      let last: Response;
      do {
        last = await request(observations(), { headers: bearer(token.body.access_token) });
      } while (last.status === 200 && Date.now() < deadline);
      expectUnauthorized(last);
    });
  });

  describe('discovery (RFC 8414)', () => {
    it('publishes the authorization server metadata with the issuer, token endpoint, JWKS and methods', async () => {
      const response = await request(`${server.url}/.well-known/oauth-authorization-server`);
      expect(response.status).to.equal(200);
      expect(response.body).to.include({
        issuer: server.url,
        token_endpoint: `${server.url}/v1/oauth/token`,
        jwks_uri: `${server.url}/.well-known/jwks.json`,
      });
      expect(response.body.grant_types_supported).to.deep.equal(['client_credentials']);
      expect(response.body.token_endpoint_auth_methods_supported).to.have.members([
        'client_secret_basic',
        'client_secret_post',
      ]);
      expect(response.body.scopes_supported).to.include.members(['observations:read', 'admin']);
      // No authorization endpoint, so no response types; RFC 8414 §3.2 allows no empty array either.
      expect(response.body).not.to.have.property('response_types_supported');
      for (const [name, value] of Object.entries(response.body as Record<string, unknown>))
        if (Array.isArray(value)) expect(value, name).not.to.be.empty;
      const jwks = await request(response.body.jwks_uri as string);
      expect(jwks.status).to.equal(200);
      expect(jwks.body.keys).to.have.length(1);
    });
  });

  describe('with openid-client, a standard OAuth library', () => {
    const discover = (clientAuth?: client.ClientAuth, secret = worker.clientSecret) =>
      client.discovery(new URL(server.url), worker.clientId, secret, clientAuth, {
        algorithm: 'oauth2',
        execute: [client.allowInsecureRequests],
      });

    it('discovers the server, gets a token with client_secret_basic, and lists observations with it', async () => {
      const config = await discover();
      expect(config.serverMetadata().token_endpoint).to.equal(`${server.url}/v1/oauth/token`);
      const tokens = await client.clientCredentialsGrant(config, { scope: 'observations:read' });
      expect(tokens.token_type.toLowerCase()).to.equal('bearer');
      expect(tokens.scope).to.equal('observations:read');
      expect(tokens.expiresIn()).to.be.within(899, 900);
      const list = await request(observations(), { headers: bearer(tokens.access_token) });
      expect(list.status).to.equal(200);
      expect(list.body).to.deep.equal({ data: [], nextCursor: null });
    });

    it('gets a token with client_secret_post as well', async () => {
      const config = await discover(client.ClientSecretPost(worker.clientSecret));
      const tokens = await client.clientCredentialsGrant(config, { scope: 'observations:write' });
      const created = await request(observations(), {
        method: 'POST',
        body: { observedAt: '2026-05-01T09:30:00Z' },
        headers: bearer(tokens.access_token),
      });
      expect(created.status).to.equal(201);
    });

    it('reports invalid_scope from the library for a scope outside the client’s', async () => {
      const config = await discover();
      const failure = await rejectionOf(client.clientCredentialsGrant(config, { scope: 'admin' }));
      expect(failure).to.be.instanceOf(client.ResponseBodyError);
      expect((failure as client.ResponseBodyError).error).to.equal('invalid_scope');
      expect((failure as client.ResponseBodyError).status).to.equal(400);
    });

    it('reports invalid_client from the library for a wrong secret', async () => {
      const config = await discover(undefined, 'not-the-secret');
      const failure = await rejectionOf(client.clientCredentialsGrant(config));
      // A 401 with a WWW-Authenticate challenge (RFC 6749 §5.2 asks for one after HTTP Basic) is reported as such.
      expect(failure).to.be.instanceOf(client.WWWAuthenticateChallengeError);
      const challenge = failure as client.WWWAuthenticateChallengeError;
      expect(challenge.status).to.equal(401);
      expect(challenge.cause.map((c) => c.scheme)).to.deep.equal(['basic']);
      expect(((await challenge.response.json()) as { error: string }).error).to.equal('invalid_client');
    });

    it('is refused with 429 and Retry-After after 10 wrong secrets from its address, while the others still get tokens', async () => {
      const wrong = await discover(undefined, 'not-the-secret');
      for (let i = 0; i < 10; i += 1) {
        const failure = await rejectionOf(client.clientCredentialsGrant(wrong));
        expect((failure as client.WWWAuthenticateChallengeError).status).to.equal(401);
      }
      // The right secret from the same address is refused too: the address is out of attempts for the client.
      const blocked = await rejectionOf(client.clientCredentialsGrant(await discover()));
      expect(blocked).to.be.instanceOf(Error);
      const response = (blocked as { cause?: unknown }).cause as globalThis.Response | undefined;
      expect(response?.status, String(blocked)).to.equal(429);
      expect(Number(response?.headers.get('retry-after'))).to.be.within(1, 900);
      // Another client of the tenant, from the same address, is not affected.
      const other = await createOAuthClient(server, tenant, ['observations:read']);
      const config = await client.discovery(
        new URL(server.url),
        other.clientId,
        other.clientSecret,
        undefined,
        {
          algorithm: 'oauth2',
          execute: [client.allowInsecureRequests],
        },
      );
      expect((await client.clientCredentialsGrant(config)).access_token).to.be.a('string');
    });
  });
});
