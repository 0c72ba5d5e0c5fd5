import type Router from '@koa/router';
import { expect } from 'chai';
import sharp from 'sharp';
import { randomUUID } from 'node:crypto';
import {
  ApiError,
  checkStandardWebhook,
  OAuthError,
  ObservationServiceClient,
  responseMeta,
  verifyConsistency,
  verifyDigestSignature,
  verifyInclusion,
  verifyStandardWebhook,
  verifyWebhookSignature,
  type ClientOptions,
  type SignedDigest,
  type Observation,
  type UserTokens,
  type WebhookEvent,
} from '../../client/src/index.js';
import { openApiPath } from '../../src/openapi/operation.js';
import { signatureHeaders } from '../../src/webhooks/signing.js';
import { digestNow } from '../support/digests.js';
import { testImage } from '../support/images.js';
import { startReceiver } from '../support/receiver.js';
import { testClock } from '../support/clock.js';
import { startTestServer, withTenant, type TestServer } from '../support/server.js';
import { eventually } from '../support/wait.js';

/** One request a client sent, as its fetch saw it. */
interface Sent {
  method: string;
  path: string;
  status: number;
  headers: Headers;
}

/** Every request any client of this file sent to the shared server: what the route coverage reads. */
const everyRequest: Sent[] = [];

/** The rejection of a call that must fail, as the ApiError it must be. */
const failure = async (call: Promise<unknown>): Promise<ApiError> => {
  try {
    await call;
  } catch (error) {
    if (error instanceof ApiError) return error;
    throw error;
  }
  throw new Error('expected the call to fail');
};

const password = 'correct horse battery staple';
const fox = { observedAt: '2026-05-01T09:30:00+02:00', notes: 'a fox', attributes: { species: 'fox' } };

describe('the TypeScript client (client/) against the running service', function () {
  this.timeout(60_000);
  let server: TestServer;
  let tenantId: string;
  /** The tenant's first admin API key: every scope of the tenant. */
  let adminKey: string;
  // The service's clock and, unless a test says otherwise, the clients' too: tokens expire when a test
  // moves it, not after a real wait.
  const clock = testClock();

  /** A client of the test server whose fetch records what it sent. */
  const connect = (options: Omit<ClientOptions, 'baseUrl' | 'fetch'> = {}, target = server) => {
    const sent: Sent[] = [];
    const client = new ObservationServiceClient({
      baseUrl: target.url,
      now: () => clock().getTime(),
      ...options,
      fetch: async (input, init) => {
        const response = await fetch(input, init);
        const record: Sent = {
          method: init.method ?? 'GET',
          path: new URL(input).pathname,
          status: response.status,
          headers: new Headers(init.headers),
        };
        sent.push(record);
        if (target === server) everyRequest.push(record);
        return response;
      },
    });
    return { client, sent };
  };
  const admin = () => connect({ apiKey: adminKey }).client;

  before(async () => {
    // Two-second access tokens, so that renewal and refresh happen within a test.
    server = await startTestServer(
      {
        ACCESS_TOKEN_TTL: '2s',
        WEBHOOK_ALLOW_HTTP: 'true',
        WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true',
      },
      { options: { clock } },
    );
    const created = await connect({ apiKey: server.platformAdminKey }).client.tenants.create({
      name: 'clientco',
      notificationEmail: 'ops@clientco.test',
    });
    tenantId = created.id;
    adminKey = created.adminApiKey;
  });
  after(async () => server.close());

  describe('the platform key and the public routes', () => {
    it('creates, lists and reads tenants; checks health and reads the discovery documents', async () => {
      const { client } = connect({ apiKey: server.platformAdminKey });
      const tenant = await client.tenants.create({ name: 'second', notificationEmail: 'ops@second.test' });
      expect(tenant.adminApiKey).to.match(/^obs_t_/);
      expect(responseMeta(tenant)).to.include({ status: 201, location: `/v1/tenants/${tenant.id}` });
      expect(await client.tenants.get(tenant.id)).to.deep.include({ id: tenant.id, name: 'second' });
      const ids: string[] = [];
      for await (const each of client.tenants.iterate({ limit: 1 })) ids.push(each.id);
      expect(ids).to.include.members([tenantId, tenant.id]);

      const anonymous = connect().client;
      expect(await anonymous.health.check()).to.deep.include({ status: 'ready' });
      expect(await anonymous.health.ready()).to.deep.include({ status: 'ready' });
      expect(await anonymous.health.live()).to.deep.equal({ status: 'alive' });
      expect((await anonymous.discovery.jwks()).keys).to.have.length.above(0);
      const metadata = await anonymous.discovery.authorizationServer();
      expect(metadata.token_endpoint).to.equal(`${server.url}/v1/oauth/token`);
      expect((await anonymous.discovery.openApi()).openapi).to.equal('3.1.0');
    });
  });

  describe('authentication', () => {
    it('sends an API key as X-API-Key', async () => {
      const { client, sent } = connect({ apiKey: adminKey });
      const observation = await client.observations.create(tenantId, fox);
      expect(sent[0]!.headers.get('x-api-key')).to.equal(adminKey);
      expect(sent[0]!.headers.get('authorization')).to.equal(null);
      const meta = responseMeta(observation)!;
      expect(meta).to.include({ status: 201, etag: '"0"', replayed: false });
      expect(meta.position).to.be.a('number').above(0);
      expect(meta.requestId).to.be.a('string');
    });

    it('logs in with the e-mail and password alone', async () => {
      await admin().users.create(tenantId, { email: 'alone@clientco.test', password, scopes: ['admin'] });
      // A login without a tenant finds the account through the users read model: wait for it to list it.
      for (const deadline = Date.now() + 10_000; ;) {
        const users = await admin().users.list(tenantId);
        if (users.data.some((user) => user.email === 'alone@clientco.test')) break;
        if (Date.now() > deadline) throw new Error('the users read model never listed the user');
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
      const { client, sent } = connect();
      const tokens = await client.login('alone@clientco.test', password);
      expect(sent.map((request) => [request.path, request.status])).to.deep.equal([['/v1/auth/token', 200]]);
      const claims = JSON.parse(Buffer.from(tokens.accessToken.split('.')[1]!, 'base64url').toString());
      expect(claims.tenantId).to.equal(tenantId);
    });

    it('sends a given access token as a bearer token, and answers its refusal with the 401', async () => {
      await admin().users.create(tenantId, { email: 'bearer@clientco.test', password, scopes: ['admin'] });
      const tokens = await connect().client.login('bearer@clientco.test', password, tenantId);
      const { client, sent } = connect({ accessToken: tokens.accessToken });
      await client.users.list(tenantId);
      expect(sent[0]!.headers.get('authorization')).to.equal(`Bearer ${tokens.accessToken}`);

      const refused = connect({ accessToken: 'not-a-token' });
      const error = await failure(refused.client.observations.list(tenantId));
      expect(error).to.include({ status: 401, type: '/problems/unauthorized' });
      expect(error.headers.get('www-authenticate')).to.match(/^Bearer realm=/);
      // Without a refresh token there is nothing to renew: no second try.
      expect(refused.sent).to.have.length(1);
    });

    it('fetches client-credentials tokens with HTTP Basic, caches them, shares one request among concurrent calls, and renews them before expiry', async () => {
      const registered = await admin().oauthClients.create(tenantId, {
        name: 'worker',
        scopes: ['observations:read', 'observations:write'],
      });
      const { client, sent } = connect({
        clientId: registered.clientId,
        clientSecret: registered.clientSecret,
      });
      const tokenRequests = () => sent.filter((request) => request.path === '/v1/oauth/token');

      await Promise.all(Array.from({ length: 5 }, () => client.observations.list(tenantId, { limit: 1 })));
      expect(tokenRequests()).to.have.length(1);
      const [tokenRequest] = tokenRequests();
      expect(tokenRequest!.method).to.equal('POST');
      expect(tokenRequest!.headers.get('authorization')).to.match(/^Basic [A-Za-z0-9+/]+=*$/);
      expect(tokenRequest!.headers.get('content-type')).to.equal('application/x-www-form-urlencoded');
      const first = await client.auth.clientCredentialsToken();
      expect(first.scope).to.equal('observations:read observations:write');
      expect(first.expiresAt.getTime() - clock().getTime()).to.be.within(0, 2000);
      const calls = sent.filter((request) => request.path.endsWith('/observations'));
      expect(calls).to.have.length(5);
      for (const call of calls)
        expect(call.headers.get('authorization')).to.equal(`Bearer ${first.accessToken}`);

      await client.observations.create(tenantId, fox);
      expect(tokenRequests(), 'the cached token is used again').to.have.length(1);

      // The token lives 2 s and is renewed 10% (0.2 s) before it expires.
      clock.advance(1900);
      await client.observations.list(tenantId, { limit: 1 });
      expect(tokenRequests()).to.have.length(2);
      const renewed = sent.at(-1)!;
      expect(renewed.status).to.equal(200);
      expect(renewed.headers.get('authorization')).to.not.equal(`Bearer ${first.accessToken}`);
    });

    it('fetches a new client-credentials token and retries once when the service refuses a cached one', async () => {
      const registered = await admin().oauthClients.create(tenantId, { name: 'skewed', scopes: ['cv:read'] });
      // A client whose clock lags: it believes its token fresh after the service has let it expire.
      let lag = 0;
      const { client, sent } = connect({
        clientId: registered.clientId,
        clientSecret: registered.clientSecret,
        now: () => clock().getTime() - lag,
      });
      await client.cvModels.list(tenantId);
      lag = 60_000;
      clock.advance(2100);
      sent.length = 0;
      const models = await client.cvModels.list(tenantId);
      expect(models.data.map((model) => model.name)).to.include('image-quality');
      expect(sent.map((request) => `${request.method} ${request.path} ${request.status}`)).to.deep.equal([
        `GET /v1/tenants/${tenantId}/cv-models 401`,
        'POST /v1/oauth/token 200',
        `GET /v1/tenants/${tenantId}/cv-models 200`,
      ]);
    });

    it('asks for narrower scopes, and reports the token endpoint’s RFC 6749 errors as OAuthError', async () => {
      const registered = await admin().oauthClients.create(tenantId, {
        name: 'narrow',
        scopes: ['observations:read', 'observations:write'],
      });
      const credentials = { clientId: registered.clientId, clientSecret: registered.clientSecret };
      const reader = connect({ ...credentials, scope: ['observations:read'] }).client;
      expect((await reader.auth.clientCredentialsToken()).scope).to.equal('observations:read');
      const forbidden = await failure(reader.observations.create(tenantId, fox));
      expect(forbidden).to.include({
        status: 403,
        type: '/problems/forbidden',
        requiredScope: 'observations:write',
      });

      const greedy = await failure(
        connect({ ...credentials, scope: 'cv:write' }).client.observations.list(tenantId),
      );
      expect(greedy).to.be.instanceOf(OAuthError);
      expect(greedy).to.include({ status: 400, error: 'invalid_scope' });

      const wrong = connect({ clientId: registered.clientId, clientSecret: 'wrong' }).client;
      const refused = await failure(wrong.observations.list(tenantId));
      expect(refused).to.be.instanceOf(OAuthError);
      expect(refused).to.include({
        status: 401,
        error: 'invalid_client',
        type: '/problems/oauth-invalid-client',
      });
      expect((refused as OAuthError).errorDescription).to.be.a('string');
      expect(refused.requestId).to.be.a('string');
    });

    it('logs a user in, and on a 401 refreshes once (for all concurrent calls), retries, and hands each pair to onTokens', async () => {
      const email = 'field@clientco.test';
      await admin().users.create(tenantId, {
        email,
        password,
        scopes: ['observations:read', 'observations:write'],
      });
      const seen: UserTokens[] = [];
      const { client, sent } = connect({ onTokens: (tokens) => void seen.push(tokens) });
      const tokens = await client.login(email, password, tenantId);
      expect(tokens).to.include({ tokenType: 'Bearer', expiresIn: 2 });
      expect(tokens.refreshToken).to.match(/^ort_/);
      expect(seen).to.deep.equal([tokens]);
      expect(sent[0]!.path).to.equal('/v1/auth/token');
      await client.observations.list(tenantId);
      expect(sent.at(-1)!.headers.get('authorization')).to.equal(`Bearer ${tokens.accessToken}`);

      clock.advance(2100);
      sent.length = 0;
      const [listed, created] = await Promise.all([
        client.observations.list(tenantId),
        client.observations.create(tenantId, fox),
        client.observations.list(tenantId),
      ]);
      expect(listed.data).to.be.an('array');
      expect(created.id).to.match(/^o_/);
      expect(sent.filter((request) => request.path === '/v1/auth/refresh')).to.have.length(1);
      expect(sent.filter((request) => request.status === 401)).to.have.length.within(1, 3);
      expect(seen).to.have.length(2);
      expect(seen[1]!.refreshToken).to.not.equal(tokens.refreshToken);
      expect(client.auth.tokens?.accessToken).to.equal(seen[1]!.accessToken);
      expect(sent.at(-1)!.headers.get('authorization')).to.equal(`Bearer ${seen[1]!.accessToken}`);
    });

    it('answers the 401 when the refresh token is refused, and forgets the session', async () => {
      const email = 'replay@clientco.test';
      await admin().users.create(tenantId, { email, password, scopes: ['observations:read'] });
      const first = connect().client;
      const tokens = await first.login(email, password, tenantId);
      await first.refresh();
      // Another client holding the spent refresh token: presenting it again revokes the whole session.
      const { client, sent } = connect({ accessToken: 'expired', refreshToken: tokens.refreshToken });
      const error = await failure(client.observations.list(tenantId));
      expect(error).to.include({ status: 401, type: '/problems/unauthorized' });
      expect(sent.map((request) => `${request.path} ${request.status}`)).to.deep.equal([
        `/v1/tenants/${tenantId}/observations 401`,
        '/v1/auth/refresh 401',
      ]);
      expect(client.auth.tokens).to.equal(undefined);
      // The reuse revoked the family: the first client's fresh pair stops working too.
      expect((await failure(first.observations.list(tenantId))).status).to.equal(401);
      expect(first.auth.tokens).to.equal(undefined);
    });

    it('logs out: the session ends on the server, and its tokens stop working for anyone holding them', async () => {
      const email = 'leaving@clientco.test';
      await admin().users.create(tenantId, { email, password, scopes: ['observations:read'] });
      const { client, sent } = connect();
      const tokens = await client.login(email, password, tenantId);
      await client.auth.logout();
      expect(client.auth.tokens).to.equal(undefined);
      expect(sent.map((request) => `${request.path} ${request.status}`)).to.include('/v1/auth/logout 204');
      const holder = connect({ accessToken: tokens.accessToken, refreshToken: tokens.refreshToken }).client;
      expect((await failure(holder.observations.list(tenantId))).status).to.equal(401);
    });
  });

  describe('typed errors', () => {
    it('a validation error: 400 with the failing fields and the request id', async () => {
      const error = await failure(
        admin().observations.create(tenantId, { observedAt: 'yesterday', position: { lat: 91, lon: 0 } }),
      );
      expect(error).to.be.instanceOf(ApiError);
      expect(error).to.include({
        status: 400,
        type: '/problems/validation-error',
        title: 'The request is not valid',
      });
      expect(error.errors.map((field) => field.path)).to.include.members(['observedAt', 'position.lat']);
      expect(error.fieldError('position.lat')).to.match(/latitude/);
      expect(error.detail).to.include('position.lat');
      expect(error.requestId).to.equal(error.headers.get('x-request-id'));
      expect(error.message).to.include('400').and.include(error.requestId!);
    });

    it('404 for what does not exist, and for another tenant’s path', async () => {
      const missing = await failure(admin().observations.get(tenantId, 'o_00000000000000000000000000'));
      expect(missing).to.include({ status: 404, type: '/problems/not-found' });
      const other = await withTenant(server, 'clientother');
      const elsewhere = await failure(admin().observations.list(other.tenantId));
      expect(elsewhere).to.include({ status: 404, type: '/problems/not-found' });
    });

    it('403 naming the scope the route needs', async () => {
      const reader = await admin().apiKeys.create(tenantId, {
        name: 'reader',
        scopes: ['observations:read'],
      });
      const error = await failure(connect({ apiKey: reader.key }).client.observations.create(tenantId, fox));
      expect(error).to.include({
        status: 403,
        type: '/problems/forbidden',
        requiredScope: 'observations:write',
      });
    });

    it('429 with retryAfter, in seconds', async () => {
      const limited = await startTestServer({ RATE_LIMIT: '2/1m' });
      try {
        const tenant = await withTenant(limited, 'limited');
        const client = connect({ apiKey: tenant.adminKey }, limited).client;
        await client.observations.list(tenant.tenantId);
        await client.observations.list(tenant.tenantId);
        const error = await failure(client.observations.list(tenant.tenantId));
        expect(error).to.include({ status: 429, type: '/problems/too-many-requests' });
        expect(error.retryAfter).to.be.a('number').within(1, 60);
      } finally {
        await limited.close();
      }
    });
  });

  describe('pagination', () => {
    it('iterates a list page by page, following nextCursor, and fetches no further page once the loop stops', async () => {
      const tenant = await connect({ apiKey: server.platformAdminKey }).client.tenants.create({
        name: 'pages',
        notificationEmail: 'ops@pages.test',
      });
      const { client, sent } = connect({ apiKey: tenant.adminApiKey });
      const created: Observation[] = [];
      for (let day = 1; day <= 7; day++) {
        created.push(
          await client.observations.create(tenant.id, { observedAt: `2026-05-0${day}T08:00:00Z` }),
        );
      }
      const minPosition = responseMeta(created.at(-1)!)!.position!;
      sent.length = 0;
      const seen: string[] = [];
      for await (const observation of client.observations.iterate(tenant.id, {
        limit: 3,
        sort: 'observedAt',
        minPosition,
      })) {
        seen.push(observation.id);
      }
      expect(seen).to.deep.equal(created.map((observation) => observation.id));
      expect(sent.map((request) => request.method)).to.deep.equal(['GET', 'GET', 'GET']);

      sent.length = 0;
      const firstFour: string[] = [];
      for await (const observation of client.observations.iterate(tenant.id, {
        limit: 3,
        sort: 'observedAt',
      })) {
        firstFour.push(observation.id);
        if (firstFour.length === 4) break;
      }
      expect(firstFour).to.deep.equal(seen.slice(0, 4));
      expect(sent).to.have.length(2);

      const page = await client.observations.list(tenant.id, { limit: 5, sort: '-observedAt' });
      expect(page.data).to.have.length(5);
      expect(page.nextCursor).to.be.a('string');
      const last = await client.observations.list(tenant.id, {
        limit: 5,
        sort: '-observedAt',
        cursor: page.nextCursor!,
      });
      expect(last.data.map((observation) => observation.id)).to.deep.equal(seen.slice(0, 2).reverse());
      expect(last.nextCursor).to.equal(null);
    });
  });

  describe('every resource group', () => {
    it('observations: create (idempotently), read, update with If-Match, history', async () => {
      const client = admin();
      const idempotencyKey = randomUUID();
      const first = await client.observations.create(tenantId, fox, { idempotencyKey });
      const again = await client.observations.create(tenantId, fox, { idempotencyKey });
      expect(again.id).to.equal(first.id);
      expect(responseMeta(again)).to.include({ status: 201, replayed: true });

      expect(await client.observations.get(tenantId, first.id)).to.deep.equal(first);
      const updated = await client.observations.update(
        tenantId,
        first.id,
        { notes: 'a red fox', attributes: { count: 2 } },
        { ifMatch: first.version },
      );
      expect(updated).to.deep.include({
        notes: 'a red fox',
        attributes: { species: 'fox', count: 2 },
        version: 1,
      });
      const stale = await failure(
        client.observations.update(tenantId, first.id, { notes: 'late' }, { ifMatch: first.version }),
      );
      expect(stale).to.include({ status: 412, type: '/problems/precondition-failed' });

      const history = await client.observations.history(tenantId, first.id);
      expect(history.map((entry) => entry.event.type)).to.deep.equal([
        'ObservationRecorded',
        'ObservationUpdated',
      ]);
      expect(history.at(-1)!.observation).to.deep.equal(updated);
    });

    it('media: upload (201, then 200 for the same bytes) and download', async () => {
      const client = admin();
      const observation = await client.observations.create(tenantId, fox);
      const image = await testImage({ width: 64, height: 48, format: 'png', background: 200 });
      const media = await client.observations.uploadMedia(tenantId, observation.id, image, {
        idempotencyKey: randomUUID(),
      });
      expect(media).to.include({ contentType: 'image/png', width: 64, height: 48, size: image.length });
      expect(responseMeta(media)!.status).to.equal(201);
      const same = await client.observations.uploadMedia(tenantId, observation.id, new Uint8Array(image));
      expect(same.id).to.equal(media.id);
      expect(responseMeta(same)!.status).to.equal(200);

      const download = await client.observations.downloadMedia(tenantId, observation.id, media.id);
      expect(Buffer.from(download.data).equals(image)).to.equal(true);
      expect(download).to.include({ contentType: 'image/png', etag: `"${media.sha256}"` });
      const thumbnail = await client.observations.downloadThumbnail(
        tenantId,
        observation.id,
        media.id,
        '160',
      );
      // Never enlarged: the 64-pixel image stays 64 pixels wide, as a WebP.
      expect((await sharp(thumbnail.data).metadata()).width).to.equal(64);
      expect(thumbnail).to.include({ contentType: 'image/webp', etag: `"${media.sha256}-w160"` });
      expect((await client.observations.get(tenantId, observation.id)).media).to.deep.equal([media]);
    });

    it('locations: create, list, read, update, delete', async () => {
      const client = admin();
      const location = await client.locations.create(tenantId, {
        name: 'North meadow',
        position: { lat: 45.1, lon: 7.2 },
        boundary: {
          type: 'Polygon',
          coordinates: [
            [
              [7.1, 45],
              [7.3, 45],
              [7.3, 45.2],
              [7.1, 45],
            ],
          ],
        },
      });
      const page = await client.locations.list(tenantId, {
        namePrefix: 'North',
        bbox: { minLon: 7, minLat: 44, maxLon: 8, maxLat: 46 },
        minPosition: responseMeta(location)!.position!,
      });
      expect(page.data.map((each) => each.id)).to.include(location.id);
      const renamed = await client.locations.update(
        tenantId,
        location.id,
        { name: 'North field' },
        { ifMatch: 0 },
      );
      expect(renamed).to.include({ name: 'North field', version: 1 });
      expect(await client.locations.get(tenantId, location.id)).to.deep.equal(renamed);
      await client.locations.delete(tenantId, location.id, { ifMatch: '"1"' });
      expect((await failure(client.locations.get(tenantId, location.id))).status).to.equal(404);
    });

    it('visits: create, update, submit with their observations, list', async () => {
      const client = admin();
      const location = await client.locations.create(tenantId, {
        name: 'Creek',
        position: { lat: 45, lon: 7 },
      });
      const visit = await client.visits.create(tenantId, {
        locationId: location.id,
        startedAt: '2026-05-01T08:00:00Z',
        participants: ['Ada'],
      });
      expect(visit).to.include({ status: 'draft', locationId: location.id });
      const observation = await client.observations.create(tenantId, { ...fox, visitId: visit.id });
      const updated = await client.visits.update(
        tenantId,
        visit.id,
        { notes: 'sunny' },
        { ifMatch: visit.version },
      );
      expect(updated.notes).to.equal('sunny');
      const submitted = await client.visits.submit(tenantId, visit.id, { idempotencyKey: randomUUID() });
      expect(submitted).to.include({ status: 'submitted' });
      expect(submitted.observationIds).to.deep.equal([observation.id]);
      expect(await client.visits.get(tenantId, visit.id)).to.deep.equal(submitted);
      const listed: string[] = [];
      for await (const each of client.visits.iterate(tenantId, {
        status: 'submitted',
        minPosition: responseMeta(submitted)!.position!,
      })) {
        listed.push(each.id);
      }
      expect(listed).to.include(visit.id);
      const conflict = await failure(client.visits.update(tenantId, visit.id, { notes: 'late' }));
      expect(conflict).to.include({ status: 409, type: '/problems/conflict' });
    });

    it('users, API keys and OAuth clients: create, list, read, disable and revoke', async () => {
      const client = admin();
      const user = await client.users.create(tenantId, {
        email: 'someone@clientco.test',
        password,
        scopes: ['cv:read'],
      });
      expect(user).to.include({ status: 'active', email: 'someone@clientco.test' });
      expect(await client.users.get(tenantId, user.id)).to.deep.equal(user);
      const users: string[] = [];
      for await (const each of client.users.iterate(tenantId)) users.push(each.email);
      expect(users).to.include('someone@clientco.test');
      expect(await client.users.disable(tenantId, user.id)).to.include({ status: 'disabled' });

      const key = await client.apiKeys.create(tenantId, { name: 'temporary', scopes: ['cv:read'] });
      const keyClient = connect({ apiKey: key.key }).client;
      await keyClient.cvModels.list(tenantId);
      expect(await client.apiKeys.get(tenantId, key.id)).to.include({ name: 'temporary', status: 'active' });
      expect((await client.apiKeys.list(tenantId, { limit: 200 })).data.map((each) => each.id)).to.include(
        key.id,
      );
      await client.apiKeys.revoke(tenantId, key.id);
      expect((await failure(keyClient.cvModels.list(tenantId))).status).to.equal(401);

      const registered = await client.oauthClients.create(tenantId, {
        name: 'temporary',
        scopes: ['cv:read'],
      });
      expect(registered.clientId).to.equal(`${tenantId}.${registered.id}`);
      expect(await client.oauthClients.get(tenantId, registered.id)).to.include({ status: 'active' });
      const clients: string[] = [];
      for await (const each of client.oauthClients.iterate(tenantId, { limit: 2 })) clients.push(each.id);
      expect(clients).to.include(registered.id);
      await client.oauthClients.revoke(tenantId, registered.id);
      const revoked = connect({
        clientId: registered.clientId,
        clientSecret: registered.clientSecret,
      }).client;
      expect(await failure(revoked.cvModels.list(tenantId))).to.include({
        status: 401,
        error: 'invalid_client',
      });
    });

    it('webhooks: subscribe, a delivery the client’s helpers verify, its attempts, redeliver, enable, delete', async () => {
      const secret = 'whsec-client-0123456789';
      const receiver = await startReceiver(secret);
      try {
        const client = admin();
        const subscription = await client.webhooks.create(tenantId, {
          url: receiver.url,
          events: ['observation.created'],
          secret,
        });
        expect(subscription).to.include({ status: 'active', url: receiver.url });
        // The answer shows the plain secret in the standard's form, which the helpers take as well.
        expect(subscription.secret).to.equal(`whsec_${Buffer.from(secret).toString('base64')}`);
        const observation = await client.observations.create(tenantId, fox);
        const [delivery] = await receiver.waitFor(1);
        const raw = delivery!.rawBody;
        const envelope = JSON.parse(raw) as WebhookEvent;
        expect(envelope).to.include({ type: 'observation.created', tenantId });
        if (envelope.type !== 'observation.created') throw new Error(envelope.type);
        expect(envelope.data).to.deep.include({
          observationId: observation.id,
          notes: fox.notes,
          version: 0,
        });
        expect(verifyWebhookSignature(raw, delivery!.headers['x-service-signature'], secret)).to.equal(true);
        expect(verifyWebhookSignature(raw, delivery!.headers['x-service-signature'], `${secret}x`)).to.equal(
          false,
        );
        expect(verifyStandardWebhook(raw, delivery!.headers, secret)).to.equal(true);
        expect(verifyStandardWebhook(raw, delivery!.headers, subscription.secret)).to.equal(true);
        expect(
          verifyWebhookSignature(raw, delivery!.headers['x-service-signature'], subscription.secret),
        ).to.equal(true);
        expect(verifyStandardWebhook(`${raw} `, delivery!.headers, secret)).to.equal(false);

        const attempts = await eventually(async () => {
          const page = await client.webhooks.deliveries(tenantId, subscription.id, { status: 'succeeded' });
          return page.data.length > 0 ? page.data : undefined;
        });
        expect(attempts[0]).to.include({ webhookId: subscription.id, eventId: envelope.id, statusCode: 204 });
        const redelivered = await client.webhooks.redeliver(
          tenantId,
          subscription.id,
          attempts[0]!.deliveryId,
        );
        expect(responseMeta(redelivered)!.status).to.equal(202);
        expect(redelivered).to.include({ deliveryId: attempts[0]!.deliveryId, manual: true });
        const [, again] = await receiver.waitFor(2);
        expect(JSON.parse(again!.rawBody)).to.include({ id: envelope.id });
        const all = await eventually(async () => {
          const seen = [];
          for await (const attempt of client.webhooks.iterateDeliveries(tenantId, subscription.id, {
            limit: 1,
          })) {
            seen.push(attempt);
          }
          return seen.length >= 2 ? seen : undefined;
        });
        expect(all.every((attempt) => attempt.eventId === envelope.id)).to.equal(true);

        const tested = await client.webhooks.test(tenantId, subscription.id, { type: 'observation.created' });
        expect(tested).to.include({ ok: true, statusCode: 204, eventType: 'observation.created' });
        const details = await client.webhooks.delivery(tenantId, subscription.id, tested.deliveryId);
        expect(details).to.include({ test: true, status: 'succeeded' });
        expect(details.attemptLog[0]!.request!.headers['webhook-id']).to.equal(tested.eventId);
        expect(await client.webhooks.pause(tenantId, subscription.id)).to.include({ status: 'paused' });
        expect(await client.webhooks.resume(tenantId, subscription.id)).to.include({
          status: 'active',
          replayed: 0,
        });
        expect(
          await client.webhooks.replayFailed(tenantId, subscription.id, { since: '2026-01-01T00:00:00Z' }),
        ).to.deep.equal({ replayed: 0, more: false });
        // The receiver checks with the secret it knows, so after a rotation to another one it refuses (401).
        const rotated = await client.webhooks.rotateSecret(tenantId, subscription.id);
        expect(rotated.secret).to.match(/^whsec_/);
        expect(rotated.previousSecretExpiresAt).to.be.a('string');
        expect(await client.webhooks.enable(tenantId, subscription.id, { replayMissed: true })).to.include({
          status: 'active',
          replayed: 0,
        });
        expect((await client.webhooks.list(tenantId)).data.map((each) => each.id)).to.include(
          subscription.id,
        );
        const listed: string[] = [];
        for await (const each of client.webhooks.iterate(tenantId)) listed.push(each.id);
        expect(listed).to.include(subscription.id);
        await client.webhooks.delete(tenantId, subscription.id);
        expect((await failure(client.webhooks.get(tenantId, subscription.id))).status).to.equal(404);
      } finally {
        await receiver.close();
      }
    });

    it('events: a page, every page, and the NDJSON download, which stops when the loop does', async () => {
      const client = admin();
      const type = ['ObservationRecorded', 'ObservationUpdated'];
      const page = await client.events.list(tenantId, { type, limit: 2 });
      expect(page.data).to.have.length(2);
      expect(page.nextCursor).to.be.a('string');
      const paged = [];
      for await (const event of client.events.iterate(tenantId, { type, limit: 3 })) paged.push(event);
      expect(paged.length).to.be.above(3);
      expect(paged.every((event) => type.includes(event.type))).to.equal(true);

      const streamed = [];
      for await (const event of client.events.stream(tenantId, { type })) streamed.push(event);
      expect(streamed.map((event) => event.position)).to.deep.equal(paged.map((event) => event.position));
      expect(streamed[0]!.metadata.tenantId).to.equal(tenantId);

      const after = streamed[1]!.position;
      const rest = [];
      for await (const event of client.events.stream(tenantId, { type, after, limit: 2 }))
        rest.push(event.position);
      expect(rest).to.deep.equal(streamed.slice(2, 4).map((event) => event.position));
      let read = 0;
      for await (const _event of client.events.stream(tenantId, {})) {
        if (++read === 2) break;
      }
      expect(read).to.equal(2);
      const only = await client.events.list(tenantId, { type: 'TenantCreated' });
      expect(only.data.map((event) => event.type)).to.deep.equal(['TenantCreated']);

      const verification = await client.events.verify(tenantId);
      expect(verification).to.include({ tenantId, ok: true, broken: null });
      expect(verification.events).to.be.at.least(streamed.length);
    });

    it('audit: the signed digests, the latest, the keys that verify them, and inclusion and consistency proofs', async () => {
      const client = admin();
      await digestNow(server, tenantId);
      await client.observations.create(tenantId, {
        observedAt: '2026-05-01T09:30:00Z',
        notes: 'after a digest',
      });
      await digestNow(server, tenantId);
      // Both signed (a digest recorded before signing has no log root to prove anything with).
      const latest = (await client.events.latestDigest(tenantId)) as SignedDigest;
      const [, older] = (await client.events.digests(tenantId)).data as SignedDigest[];
      expect(verifyDigestSignature(latest, await client.discovery.digestKeys()).ok).to.equal(true);
      const [first] = (await client.events.list(tenantId, { limit: 1 })).data;
      const inclusion = await client.events.inclusionProof(tenantId, { eventId: first!.id });
      const { leafIndex, treeSize, path } = inclusion;
      expect(
        verifyInclusion({ eventHash: inclusion.hash }, leafIndex, treeSize, path, latest.logRoot),
      ).to.equal(true);
      const consistency = await client.events.consistencyProof(tenantId, {
        from: older!.size,
        to: latest.size,
      });
      expect(
        verifyConsistency(older!.size, latest.size, older!.logRoot, latest.logRoot, consistency.path),
      ).to.equal(true);
    });

    it('CV jobs and models: list the models, request a job (202), follow it to its result, list the jobs', async () => {
      const client = admin();
      const models = await client.cvModels.list(tenantId);
      expect(models.data.map((model) => model.name)).to.include.members([
        'image-quality',
        'object-proposals',
      ]);
      const observation = await client.observations.create(tenantId, fox);
      await client.observations.uploadMedia(
        tenantId,
        observation.id,
        await testImage({ width: 320, height: 240, format: 'jpeg', background: 128 }),
      );
      const job = await client.cvJobs.create(
        tenantId,
        { observationId: observation.id, model: 'image-quality' },
        { idempotencyKey: randomUUID() },
      );
      expect(job).to.include({ status: 'queued', observationId: observation.id, model: 'image-quality' });
      expect(responseMeta(job)).to.include({
        status: 202,
        location: `/v1/tenants/${tenantId}/cv-jobs/${job.id}`,
      });
      const done = await client.cvJobs.wait(tenantId, job.id, { timeoutMs: 20_000, intervalMs: 50 });
      expect(done.status).to.equal('completed');
      expect(done.result!.summary).to.have.property('usable');
      const listed = await client.cvJobs.list(tenantId, {
        observationId: observation.id,
        minPosition: responseMeta(job)!.position!,
      });
      expect(listed.data.map((each) => each.id)).to.deep.equal([job.id]);
      const all: string[] = [];
      for await (const each of client.cvJobs.iterate(tenantId, { model: 'image-quality' })) all.push(each.id);
      expect(all).to.include(job.id);
      const refused = await failure(
        client.cvJobs.create(tenantId, { observationId: observation.id, model: 'nope' }),
      );
      expect(refused.fieldError('model')).to.match(/not a known model/);
    });
  });

  describe('route coverage', () => {
    it('has sent a request to every route the app serves (but the browser docs page)', () => {
      const dispatch = server.service.app.middleware.find(
        (middleware) => (middleware as { router?: Router }).router,
      ) as unknown as { router: Router };
      const served = dispatch.router.stack.flatMap((layer) =>
        layer.methods
          .filter((method) => method !== 'HEAD')
          .map((method) => ({ method, path: openApiPath(String(layer.path)).replace(/(.)\/$/, '$1') })),
      );
      expect(served.length, 'the routes the router serves').to.be.above(50);
      // The docs page and what a browser fetches for it (its script, its icon), not the API.
      const browserOnly = ['GET /docs', 'GET /docs/redoc.standalone.js', 'GET /favicon.ico'];
      const missing = served
        .filter(({ method, path }) => !browserOnly.includes(`${method} ${path}`))
        .filter(({ method, path }) => {
          const pattern = new RegExp(`^${path.replace(/\{[^}]+\}/g, '[^/]+')}/?$`);
          return !everyRequest.some((request) => request.method === method && pattern.test(request.path));
        })
        .map(({ method, path }) => `${method} ${path}`);
      expect(missing, 'routes the client never called').to.deep.equal([]);
    });
  });
});

describe('the TypeScript client (client/) without a server', () => {
  /** A fetch that answers from a script and records the URLs and headers it was asked for. */
  const scripted = (...answers: (() => Response)[]) => {
    const asked: { url: string; headers: Headers }[] = [];
    const fetch = (url: string, init: RequestInit) => {
      asked.push({ url, headers: new Headers(init.headers) });
      const answer = answers.shift();
      if (!answer) throw new Error(`unexpected request to ${url}`);
      return Promise.resolve(answer());
    };
    return { asked, fetch };
  };
  const json =
    (body: unknown, status = 200, headers: Record<string, string> = {}) =>
    () =>
      new Response(JSON.stringify(body), {
        status,
        headers: { 'content-type': 'application/json', ...headers },
      });

  it('talks to the production address unless baseUrl says otherwise, keeping a path prefix', async () => {
    const production = scripted(json({ status: 'ok' }));
    await new ObservationServiceClient({ fetch: production.fetch }).health.check();
    expect(production.asked[0]!.url).to.equal('https://api.observation-service.example/health');

    const prefixed = scripted(json({ data: [], nextCursor: null }));
    await new ObservationServiceClient({
      baseUrl: 'https://example.test/api/',
      fetch: prefixed.fetch,
    }).events.list('t_acme', { type: ['A', 'B'], after: 5 });
    expect(prefixed.asked[0]!.url).to.equal(
      'https://example.test/api/v1/tenants/t_acme/events?after=5&type=A&type=B',
    );
  });

  it('takes an option, query parameter or call option that is undefined as one left out', async () => {
    const script = scripted(json({ data: [], nextCursor: null }), json({ id: 'obs_1' }));
    const client = new ObservationServiceClient({
      baseUrl: undefined,
      apiKey: undefined,
      accessToken: undefined,
      refreshToken: undefined,
      clientId: undefined,
      clientSecret: undefined,
      scope: undefined,
      tokenUrl: undefined,
      headers: undefined,
      onTokens: undefined,
      now: undefined,
      fetch: script.fetch,
    });
    await client.observations.list('t_acme', { limit: undefined, cursor: undefined, bbox: undefined });
    await client.observations.update(
      't_acme',
      'obs_1',
      { notes: undefined },
      { ifMatch: undefined, headers: undefined, signal: undefined, correlationId: undefined },
    );
    expect(script.asked.map((asked) => asked.url)).to.deep.equal([
      'https://api.observation-service.example/v1/tenants/t_acme/observations',
      'https://api.observation-service.example/v1/tenants/t_acme/observations/obs_1',
    ]);
    for (const { headers } of script.asked) {
      for (const name of ['x-api-key', 'authorization', 'if-match', 'x-correlation-id']) {
        expect(headers.get(name), name).to.equal(null);
      }
    }
  });

  it('asks the tokenUrl for client-credentials tokens, with the scope and form-encoded Basic credentials', async () => {
    const script = scripted(
      json({ access_token: 'tok', token_type: 'Bearer', expires_in: 900, scope: 'cv:read' }),
      json({ data: [], nextCursor: null }),
    );
    const client = new ObservationServiceClient({
      baseUrl: 'https://example.test',
      tokenUrl: 'https://auth.example.test/token',
      clientId: 't_acme.c_1',
      clientSecret: 'a b:c',
      scope: ['cv:read'],
      fetch: script.fetch,
    });
    await client.cvModels.list('t_acme');
    expect(script.asked.map((request) => request.url)).to.deep.equal([
      'https://auth.example.test/token',
      'https://example.test/v1/tenants/t_acme/cv-models',
    ]);
    const basic = script.asked[0]!.headers.get('authorization')!.replace(/^Basic /, '');
    expect(Buffer.from(basic, 'base64').toString()).to.equal('t_acme.c_1:a+b%3Ac');
    expect(script.asked[1]!.headers.get('authorization')).to.equal('Bearer tok');
  });

  it('turns an answer that is no problem document into an ApiError too, with Retry-After as an HTTP date', async () => {
    const at = new Date(Date.now() + 30_000).toUTCString();
    const script = scripted(
      () =>
        new Response('<html>Bad gateway</html>', {
          status: 502,
          statusText: 'Bad Gateway',
          headers: { 'retry-after': at },
        }),
    );
    const error = await failure(
      new ObservationServiceClient({ apiKey: 'k', fetch: script.fetch }).health.check(),
    );
    expect(error).to.include({ status: 502, type: 'about:blank', title: 'Bad Gateway' });
    expect(error.detail).to.include('Bad gateway');
    expect(error.retryAfter).to.be.within(28, 31);
    expect(error.errors).to.deep.equal([]);
  });

  describe('webhook signatures', () => {
    const secret = 'whsec-unit-0123456789';
    const raw = JSON.stringify({ id: 'evt_1', type: 'observation.created', data: { a: 'ü' } });
    const now = new Date('2026-05-01T07:30:00Z');
    const signed = signatureHeaders('evt_1', raw, secret, now);

    it('X-Service-Signature: the hex HMAC of the raw body, compared in constant time', () => {
      const header = signed['X-Service-Signature']!;
      expect(verifyWebhookSignature(raw, header, secret)).to.equal(true);
      expect(verifyWebhookSignature(Buffer.from(raw), header, secret)).to.equal(true);
      expect(verifyWebhookSignature(raw, header.toUpperCase(), secret)).to.equal(true);
      expect(verifyWebhookSignature(raw.replace('ü', 'u'), header, secret)).to.equal(false);
      expect(verifyWebhookSignature(raw, header, 'another-secret-000')).to.equal(false);
      expect(verifyWebhookSignature(raw, header.slice(2), secret)).to.equal(false);
      expect(verifyWebhookSignature(raw, undefined, secret)).to.equal(false);
      expect(verifyWebhookSignature(raw, 'zz', secret)).to.equal(false);
    });

    it('Standard Webhooks: id, timestamp within the tolerance, any of several v1 signatures', () => {
      const lower = Object.fromEntries(
        Object.entries(signed).map(([name, value]) => [name.toLowerCase(), value]),
      );
      expect(verifyStandardWebhook(raw, signed, secret, { now })).to.equal(true);
      expect(
        verifyStandardWebhook(raw, new Headers(lower), secret, { now: now.getTime() + 299_000 }),
      ).to.equal(true);
      expect(checkStandardWebhook(raw, lower, secret, { now: now.getTime() + 301_000 })).to.deep.equal({
        ok: false,
        reason: 'timestamp-out-of-tolerance',
      });
      expect(checkStandardWebhook(raw, lower, secret, { now: now.getTime() - 301_000 }).ok).to.equal(false);
      expect(
        verifyStandardWebhook(raw, lower, secret, { now: now.getTime() + 301_000, toleranceSeconds: 600 }),
      ).to.equal(true);
      // Several signatures (a secret being rotated): one matching is enough; other versions are skipped.
      const several = { ...lower, 'webhook-signature': `v1,AAAA v1a,xyz ${lower['webhook-signature']}` };
      expect(verifyStandardWebhook(raw, several, secret, { now })).to.equal(true);
      const none = { ...lower, 'webhook-signature': `v2,${lower['webhook-signature']!.slice(3)} v1,AAAA` };
      expect(checkStandardWebhook(raw, none, secret, { now })).to.deep.equal({
        ok: false,
        reason: 'invalid-signature',
      });
      // The id and timestamp are signed: changing either breaks the signature.
      expect(verifyStandardWebhook(raw, { ...lower, 'webhook-id': 'evt_2' }, secret, { now })).to.equal(
        false,
      );
      const { ['webhook-id']: _id, ...withoutId } = lower;
      expect(checkStandardWebhook(raw, withoutId, secret, { now })).to.deep.equal({
        ok: false,
        reason: 'missing-headers',
      });
      expect(
        checkStandardWebhook(raw, { ...lower, 'webhook-timestamp': 'soon' }, secret, { now }).ok,
      ).to.equal(false);
      expect(verifyStandardWebhook(raw, lower, 'another-secret-000', { now })).to.equal(false);
      expect(checkStandardWebhook(raw, lower, secret, { now })).to.deep.equal({
        ok: true,
        id: 'evt_1',
        timestamp: now.getTime() / 1000,
      });
    });
  });
});
