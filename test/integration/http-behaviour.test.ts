import Database from 'better-sqlite3';
import { expect } from 'chai';
import { request as httpRequest, type IncomingMessage } from 'node:http';
import { connect } from 'node:net';
import { join } from 'node:path';
import { bearer, loggedIn, login, password, refresh, createUser } from '../support/auth.js';
import { ConfigError, loadConfig } from '../../src/config.js';
import { VersionConflictError } from '../../src/core/errors.js';
import { request, startTestServer, withTenant, type TestServer } from '../support/server.js';
import { testClock } from '../support/clock.js';
import { testImage } from '../support/images.js';
import { eventually } from '../support/wait.js';

type Response = Awaited<ReturnType<typeof request>>;

const fox = {
  observedAt: '2026-05-01T09:30:00+02:00',
  position: { lat: 45.1, lon: 7.2 },
  attributes: { species: 'fox' },
};

const expectProblem = (response: Response, status: number, type?: string) => {
  expect(response.status, JSON.stringify(response.body)).to.equal(status);
  expect(response.headers.get('content-type')).to.match(/^application\/problem\+json/);
  if (type) expect(response.body.type).to.equal(type);
};

/** The headers every response carries, whatever its status. */
const expectSecurityHeaders = (response: Response, { cacheControl = 'no-store' } = {}) => {
  expect(response.headers.get('x-content-type-options')).to.equal('nosniff');
  expect(response.headers.get('referrer-policy')).to.equal('no-referrer');
  expect(response.headers.get('x-frame-options')).to.equal('DENY');
  expect(response.headers.get('content-security-policy')).to.equal(
    "default-src 'none'; frame-ancestors 'none'",
  );
  expect(response.headers.get('cache-control')).to.equal(cacheControl);
};

describe('cross-cutting HTTP configuration', () => {
  const base = { DATA_DIR: '/tmp/unused' };
  it('has defaults: 24 h keys held 5 minutes while they run, 600 requests a minute, no CORS, time-outs of 20 s, 60 s and 5 s, no proxy', () => {
    expect(loadConfig(base).http).to.deep.equal({
      idempotencyTtlMs: 24 * 3_600_000,
      idempotencyLeaseMs: 5 * 60_000,
      rateLimit: { limit: 600, windowMs: 60_000 },
      corsOrigins: null,
      headersTimeoutMs: 20_000,
      requestTimeoutMs: 60_000,
      keepAliveTimeoutMs: 5_000,
      trustProxy: 0,
    });
  });

  it('reads RATE_LIMIT, CORS_ORIGINS, IDEMPOTENCY_TTL and IDEMPOTENCY_LEASE, the time-outs and TRUST_PROXY', () => {
    const { http } = loadConfig({
      ...base,
      RATE_LIMIT: '100/30s',
      CORS_ORIGINS: 'https://app.example.com,http://[::1]:8080',
      IDEMPOTENCY_TTL: '1h',
      IDEMPOTENCY_LEASE: '3m',
      HTTP_HEADERS_TIMEOUT: '5s',
      HTTP_REQUEST_TIMEOUT: '2m',
      HTTP_KEEP_ALIVE_TIMEOUT: '65s',
      TRUST_PROXY: '2',
    });
    expect(http).to.deep.equal({
      idempotencyTtlMs: 3_600_000,
      idempotencyLeaseMs: 180_000,
      rateLimit: { limit: 100, windowMs: 30_000 },
      corsOrigins: ['https://app.example.com', 'http://[::1]:8080'],
      headersTimeoutMs: 5_000,
      requestTimeoutMs: 120_000,
      keepAliveTimeoutMs: 65_000,
      trustProxy: 2,
    });
    expect(loadConfig({ ...base, RATE_LIMIT: 'off', CORS_ORIGINS: '*' }).http).to.deep.include({
      rateLimit: null,
      corsOrigins: '*',
    });
  });

  for (const [name, value] of [
    ['CORS_ORIGINS', 'https://app.example.com/path'],
    ['CORS_ORIGINS', 'app.example.com'],
    ['RATE_LIMIT', '600'],
    ['RATE_LIMIT', '600/500ms'],
    ['RATE_LIMIT', '0/1m'],
    ['IDEMPOTENCY_TTL', '0'],
    ['HTTP_KEEP_ALIVE_TIMEOUT', 'soon'],
    ['TRUST_PROXY', 'true'],
  ] as const) {
    it(`refuses ${name}=${value}, naming it`, () => {
      expect(() => loadConfig({ ...base, [name]: value })).to.throw(ConfigError, name);
    });
  }

  it('refuses an IDEMPOTENCY_LEASE whose requests could outlive three quarters of it while their bodies arrive', () => {
    expect(() => loadConfig({ ...base, IDEMPOTENCY_LEASE: '80s' })).to.throw(
      ConfigError,
      'IDEMPOTENCY_LEASE must be longer than 4/3 of HTTP_REQUEST_TIMEOUT (80 s)',
    );
    expect(loadConfig({ ...base, IDEMPOTENCY_LEASE: '81s' }).http.idempotencyLeaseMs).to.equal(81_000);
    expect(() => loadConfig({ ...base, IDEMPOTENCY_LEASE: '5m', HTTP_REQUEST_TIMEOUT: '4m' })).to.throw(
      ConfigError,
      'IDEMPOTENCY_LEASE',
    );
  });

  it('refuses headers that may take longer than the whole request', () => {
    expect(() => loadConfig({ ...base, HTTP_HEADERS_TIMEOUT: '2m', HTTP_REQUEST_TIMEOUT: '1m' })).to.throw(
      ConfigError,
      'HTTP_HEADERS_TIMEOUT',
    );
  });
});

describe('cross-cutting HTTP behaviour', () => {
  let server: TestServer;
  afterEach(async () => server.close());

  describe('Idempotency-Key on POST', () => {
    let tenant: Awaited<ReturnType<typeof withTenant>>;
    let apiKey: string;
    const observations = (tenantId = tenant.tenantId) => `${server.url}/v1/tenants/${tenantId}/observations`;
    const post = (
      key: string | undefined,
      body: unknown = fox,
      { url = observations(), credential = apiKey }: { url?: string; credential?: string } = {},
    ) =>
      request(url, {
        method: 'POST',
        body,
        headers: { 'X-API-Key': credential, ...(key === undefined ? {} : { 'Idempotency-Key': key }) },
      });

    beforeEach(async () => {
      server = await startTestServer();
      tenant = await withTenant(server);
      apiKey = await tenant.key(['observations:read', 'observations:write']);
    });

    it('replays the first response (status, body, Location, ETag, X-Position) and writes once', async () => {
      const first = await post('create-fox-1');
      expect(first.status).to.equal(201);
      expect(first.headers.get('idempotency-replayed')).to.equal(null);
      const head = await server.stores.eventStore.headPosition();

      const second = await post('create-fox-1');
      expect(second.status).to.equal(201);
      expect(second.body).to.deep.equal(first.body);
      for (const header of ['location', 'etag', 'x-position', 'content-type'])
        expect(second.headers.get(header), header).to.equal(first.headers.get(header));
      expect(second.headers.get('idempotency-replayed')).to.equal('true');
      expect(second.headers.get('x-request-id')).to.not.equal(first.headers.get('x-request-id'));
      expect(await server.stores.eventStore.headPosition()).to.equal(head);

      // Without a key, the same body is a second observation, as before.
      const other = await post(undefined);
      expect(other.status).to.equal(201);
      expect(other.body.id).to.not.equal(first.body.id);
    });

    it('answers 422 to the same key with another body, or on another path', async () => {
      const first = await post('k-422');
      expect(first.status).to.equal(201);
      const head = await server.stores.eventStore.headPosition();
      expectProblem(
        await post('k-422', { ...fox, notes: 'another' }),
        422,
        '/problems/idempotency-key-reused',
      );
      // Another route the credential may call (visits need observations:write too); one it may not call
      // answers its 403 before any key is looked at.
      const visits = `${server.url}/v1/tenants/${tenant.tenantId}/visits`;
      expectProblem(await post('k-422', fox, { url: visits }), 422, '/problems/idempotency-key-reused');
      const location = `${server.url}/v1/tenants/${tenant.tenantId}/locations`;
      expectProblem(await post('k-422', fox, { url: location }), 403, '/problems/forbidden');
      expect(await server.stores.eventStore.headPosition()).to.equal(head);
      // The first response still replays.
      expect((await post('k-422')).body.id).to.equal(first.body.id);
    });

    /**
     * A POST with the key that sends its headers and half its body, and keeps the connection open: the
     * request holds its claim on the key, recorded before this resolves, until `finish` sends the rest.
     */
    const slowPost = async (key: string) => {
      const body = JSON.stringify(fox);
      const half = Math.floor(body.length / 2);
      const slow = httpRequest(observations(), {
        method: 'POST',
        headers: {
          'Content-Type': 'application/json',
          'Content-Length': String(Buffer.byteLength(body)),
          'X-API-Key': apiKey,
          'Idempotency-Key': key,
        },
      });
      const answered = new Promise<{ status: number; body: any; headers: IncomingMessage['headers'] }>(
        (resolve, reject) => {
          slow.on('error', reject);
          slow.on('response', (res: IncomingMessage) => {
            let text = '';
            res.setEncoding('utf8');
            res.on('data', (chunk: string) => (text += chunk));
            res.on('end', () =>
              resolve({ status: res.statusCode!, body: JSON.parse(text), headers: res.headers }),
            );
          });
        },
      );
      slow.write(body.slice(0, half));
      slow.flushHeaders();
      const db = new Database(join(server.dataDir, 'idempotency.db'), { readonly: true });
      try {
        await eventually(async () => {
          const row = db.prepare('SELECT state FROM idempotency_keys WHERE key = ?').get(key) as
            { state: string } | undefined;
          return Promise.resolve(row?.state === 'pending' ? true : undefined);
        });
      } finally {
        db.close();
      }
      return {
        finish: () => {
          slow.end(body.slice(half));
          return answered;
        },
      };
    };

    it('answers 409 while a request with the key is still in flight, and replays it once it is done', async () => {
      const slow = await slowPost('slow-upload');
      // While its claim is held, the same key again is refused, with the same or another body.
      const during = await post('slow-upload');
      expectProblem(during, 409, '/problems/idempotency-key-in-flight');
      expect(during.headers.get('retry-after')).to.equal('1');
      expectProblem(await post('slow-upload', { ...fox, notes: 'x' }), 409);

      const first = await slow.finish();
      expect(first.status).to.equal(201);
      const after = await post('slow-upload');
      expect(after.status).to.equal(201);
      expect(after.body).to.deep.equal(first.body);
    });

    it('lets a request that outlived its hold on the key (IDEMPOTENCY_LEASE) write nothing, so the write happens once', async () => {
      await server.close();
      const clock = testClock();
      server = await startTestServer({}, { options: { clock } });
      tenant = await withTenant(server);
      apiKey = await tenant.key(['observations:read', 'observations:write']);
      const observationCount = async () => {
        const list = await request(`${observations()}?limit=200`, { headers: { 'X-API-Key': apiKey } });
        return (list.body.data as unknown[]).length;
      };
      const lapsed = (answer: Awaited<ReturnType<Awaited<ReturnType<typeof slowPost>>['finish']>>) => {
        expect(answer.status, JSON.stringify(answer.body)).to.equal(503);
        expect(answer.body.type).to.equal('/problems/idempotency-key-lapsed');
        expect(answer.headers['retry-after']).to.equal('1');
      };

      // Stalled past three quarters of the 5-minute lease, with nobody else holding the key: it writes
      // nothing, and gives the key up, so that a retry runs afresh.
      const alone = await slowPost('stalled-alone');
      clock.advance(4 * 60_000);
      const head = await server.stores.eventStore.headPosition();
      lapsed(await alone.finish());
      expect(await server.stores.eventStore.headPosition()).to.equal(head);
      const retried = await post('stalled-alone');
      expect(retried.status).to.equal(201);
      expect(retried.headers.get('idempotency-replayed')).to.equal(null);

      // Stalled past the whole lease, while a retry with the key claimed it and ran: the stalled request
      // comes back late and writes nothing, and the answer kept is the retry's.
      const late = await slowPost('stalled-late');
      clock.advance(6 * 60_000);
      const retry = await post('stalled-late');
      expect(retry.status).to.equal(201);
      lapsed(await late.finish());
      const replayed = await post('stalled-late');
      expect(replayed.headers.get('idempotency-replayed')).to.equal('true');
      expect(replayed.body.id).to.equal(retry.body.id);
      await eventually(async () => ((await observationCount()) === 2 ? true : undefined));
      expect(await observationCount()).to.equal(2);
    });

    it('keeps keys apart per credential and per tenant', async () => {
      const first = await post('shared-key');
      const otherKey = await tenant.key(['observations:write']);
      const byOtherKey = await post('shared-key', fox, { credential: otherKey });
      expect(byOtherKey.status).to.equal(201);
      expect(byOtherKey.body.id).to.not.equal(first.body.id);
      expect(byOtherKey.headers.get('idempotency-replayed')).to.equal(null);

      const other = await withTenant(server, 'globex');
      const otherTenantKey = await other.key(['observations:write']);
      const inOtherTenant = await post('shared-key', fox, {
        url: observations(other.tenantId),
        credential: otherTenantKey,
      });
      expect(inOtherTenant.status).to.equal(201);
      expect(inOtherTenant.body.tenantId).to.equal(other.tenantId);
    });

    it('scopes a user’s key to the user, not the token: a retry after a refresh replays', async () => {
      const session = await loggedIn(server, tenant, ['observations:write']);
      const send = (token: string) =>
        request(observations(), {
          method: 'POST',
          body: fox,
          headers: { ...bearer(token), 'Idempotency-Key': 'user-retry' },
        });
      const first = await send(session.accessToken);
      expect(first.status).to.equal(201);
      const refreshed = await refresh(server, session.refreshToken);
      expect(refreshed.body.accessToken).to.not.equal(session.accessToken);
      const retried = await send(refreshed.body.accessToken as string);
      expect(retried.headers.get('idempotency-replayed')).to.equal('true');
      expect(retried.body.id).to.equal(first.body.id);
    });

    it('expires keys after IDEMPOTENCY_TTL', async () => {
      await server.close();
      const clock = testClock();
      server = await startTestServer({ IDEMPOTENCY_TTL: '500ms' }, { options: { clock } });
      tenant = await withTenant(server);
      apiKey = await tenant.key(['observations:write']);
      const first = await post('short-lived');
      expect((await post('short-lived')).body.id).to.equal(first.body.id);
      clock.advance(600);
      const later = await post('short-lived');
      expect(later.status).to.equal(201);
      expect(later.body.id).to.not.equal(first.body.id);
      expect(later.headers.get('idempotency-replayed')).to.equal(null);
    });

    it('keeps 4xx answers, and replays them', async () => {
      const bad = { ...fox, position: { lat: 999, lon: 7 } };
      const first = await post('bad-body', bad);
      expectProblem(first, 400, '/problems/validation-error');
      const second = await post('bad-body', bad);
      expectProblem(second, 400);
      expect(second.headers.get('idempotency-replayed')).to.equal('true');
      expect(second.body.requestId).to.equal(first.body.requestId);
    });

    it('releases the key after a 5xx: a retry runs afresh', async () => {
      const store = server.stores.eventStore;
      const append = store.appendToStream.bind(store);
      store.appendToStream = () => Promise.reject(new Error('the disk is on fire'));
      try {
        expectProblem(await post('after-500'), 500, '/problems/internal-error');
      } finally {
        store.appendToStream = append;
      }
      const retried = await post('after-500');
      expect(retried.status).to.equal(201);
      expect(retried.headers.get('idempotency-replayed')).to.equal(null);
    });

    it('releases the key after a lost race (409 version-conflict): a retry runs afresh', async () => {
      const store = server.stores.eventStore;
      const append = store.appendToStream.bind(store);
      // A create decides without reading, and a conflict sends it the full way once more: both lose.
      let losses = 0;
      store.appendToStream = (stream, _events, expected) => {
        if ((losses += 1) === 2) store.appendToStream = append;
        return Promise.reject(new VersionConflictError(stream, String(expected), 0));
      };
      expectProblem(await post('after-conflict'), 409, '/problems/version-conflict');
      const retried = await post('after-conflict');
      expect(retried.status).to.equal(201);
      expect(retried.headers.get('idempotency-replayed')).to.equal(null);
      expect((await post('after-conflict')).headers.get('idempotency-replayed')).to.equal('true');
    });

    it('refuses a malformed key with 400', async () => {
      expectProblem(await post('x'.repeat(256)), 400, '/problems/invalid-idempotency-key');
      expectProblem(await post('caf\u00e9'), 400, '/problems/invalid-idempotency-key');
      expectProblem(await post(''), 400, '/problems/invalid-idempotency-key');
      expect((await post('x'.repeat(255))).status).to.equal(201);
      expect((await post('any printable: ASCII ~!@#$%^&*()')).status).to.equal(201);
    });

    it('keeps the body limits and media types of the routes (413, 415) with a key', async () => {
      await server.close();
      server = await startTestServer({ BODY_LIMIT: '1kb' });
      tenant = await withTenant(server);
      apiKey = await tenant.key(['observations:write']);
      expectProblem(
        await post('too-large', { ...fox, notes: 'n'.repeat(2000) }),
        413,
        '/problems/payload-too-large',
      );
      expectProblem(
        await request(observations(), {
          method: 'POST',
          rawBody: JSON.stringify(fox),
          headers: { 'content-type': 'text/plain', 'X-API-Key': apiKey, 'Idempotency-Key': 'text' },
        }),
        415,
        '/problems/unsupported-media-type',
      );
      // A byte-order mark is dropped as raw-body drops it.
      const bom = await request(observations(), {
        method: 'POST',
        rawBody: `\uFEFF${JSON.stringify(fox)}`,
        headers: { 'content-type': 'application/json', 'X-API-Key': apiKey, 'Idempotency-Key': 'bom' },
      });
      expect(bom.status, JSON.stringify(bom.body)).to.equal(201);
    });

    it('replays an image upload, whose raw body the media route reads after the middleware', async () => {
      await server.close();
      server = await startTestServer({ MEDIA_MAX_BYTES: '20kb' });
      tenant = await withTenant(server);
      apiKey = await tenant.key(['observations:read', 'observations:write']);
      const observation = await post(undefined);
      const media = `${observations()}/${observation.body.id}/media`;
      const upload = (key: string, bytes: Buffer) =>
        request(media, {
          method: 'POST',
          rawBody: bytes,
          headers: { 'content-type': 'image/png', 'X-API-Key': apiKey, 'Idempotency-Key': key },
        });
      const image = await testImage({ width: 64, height: 48, format: 'png' });
      const first = await upload('photo-1', image);
      expect(first.status, JSON.stringify(first.body)).to.equal(201);
      const second = await upload('photo-1', image);
      expect(second.status).to.equal(201);
      expect(second.body).to.deep.equal(first.body);
      expect(second.headers.get('location')).to.equal(first.headers.get('location'));
      expect(second.headers.get('idempotency-replayed')).to.equal('true');
      expectProblem(await upload('photo-1', Buffer.concat([image, Buffer.from([0])])), 422);
      expectProblem(await upload('photo-2', Buffer.alloc(30 * 1024, 1)), 413, '/problems/payload-too-large');
    });

    it('does not apply to the login and token endpoints, nor to requests whose credentials fail', async () => {
      const user = await createUser(server, tenant, {
        email: 'ada@acme.test',
        scopes: ['observations:read'],
      });
      const sign = () =>
        request(`${server.url}/v1/auth/token`, {
          method: 'POST',
          body: { email: user.email, password, tenantId: tenant.tenantId },
          headers: { 'Idempotency-Key': 'login' },
        });
      const [a, b] = [await sign(), await sign()];
      expect(a.status).to.equal(200);
      expect(b.status).to.equal(200);
      expect(b.body.refreshToken).to.not.equal(a.body.refreshToken);
      expect(b.headers.get('idempotency-replayed')).to.equal(null);
      expect(
        (await login(server, { email: user.email, password: 'wrong password!', tenantId: tenant.tenantId }))
          .status,
      ).to.equal(401);

      const refused = await post('no-such-credential', fox, { credential: 'obs_nope' });
      expectProblem(refused, 401, '/problems/unauthorized');
      expect(refused.headers.get('www-authenticate')).to.match(/^Bearer/);
    });
  });

  describe('rate limits', () => {
    it('count per credential, announce themselves in RateLimit headers, and answer 429 with Retry-After', async () => {
      server = await startTestServer({ RATE_LIMIT: '3/1m' });
      const tenant = await withTenant(server);
      const [one, two] = [await tenant.key(['observations:read']), await tenant.key(['observations:read'])];
      const list = (key: string) =>
        request(`${server.url}/v1/tenants/${tenant.tenantId}/observations`, {
          headers: { 'X-API-Key': key },
        });

      const answers = [await list(one), await list(one), await list(one)];
      expect(answers.map((r) => r.status)).to.deep.equal([200, 200, 200]);
      for (const response of answers)
        expect(response.headers.get('ratelimit-policy')).to.equal('"default";q=3;w=60');
      expect(answers.map((r) => /r=(\d+)/.exec(r.headers.get('ratelimit')!)?.[1])).to.deep.equal([
        '2',
        '1',
        '0',
      ]);
      expect(answers[0]!.headers.get('ratelimit')).to.match(/^"default";r=2;t=(\d+)$/);
      expect(Number(/t=(\d+)/.exec(answers[0]!.headers.get('ratelimit')!)![1])).to.be.within(1, 60);

      const refused = await list(one);
      expectProblem(refused, 429, '/problems/too-many-requests');
      expect(Number(refused.headers.get('retry-after'))).to.be.within(1, 60);
      expect(refused.headers.get('ratelimit')).to.match(/^"default";r=0;t=\d+$/);
      expectSecurityHeaders(refused);

      // Another credential has its own budget.
      expect((await list(two)).status).to.equal(200);
      // /health is never limited.
      for (let i = 0; i < 5; i++) expect((await request(`${server.url}/health`)).status).to.equal(200);
    });

    it('count anonymous requests by client address', async () => {
      server = await startTestServer({ RATE_LIMIT: '2/1m' });
      const anonymous = () => request(`${server.url}/v1/tenants`);
      expect((await anonymous()).status).to.equal(401);
      expect((await anonymous()).status).to.equal(401);
      const refused = await anonymous();
      expectProblem(refused, 429);
      expect(refused.headers.get('retry-after')).to.match(/^\d+$/);
    });

    it('are gone with RATE_LIMIT=off', async () => {
      server = await startTestServer({ RATE_LIMIT: 'off' });
      const response = await request(`${server.url}/v1/tenants`);
      expect(response.headers.get('ratelimit')).to.equal(null);
      expect(response.headers.get('ratelimit-policy')).to.equal(null);
    });
  });

  describe('CORS', () => {
    const preflight = (origin: string, path = '/v1/tenants/t_acme/observations') =>
      fetch(`${server.url}${path}`, {
        method: 'OPTIONS',
        headers: {
          Origin: origin,
          'Access-Control-Request-Method': 'POST',
          'Access-Control-Request-Headers': 'authorization, idempotency-key, content-type',
        },
      });

    it('is off without CORS_ORIGINS: no CORS headers at all', async () => {
      server = await startTestServer();
      const answer = await preflight('https://app.example.com');
      expect(answer.headers.get('access-control-allow-origin')).to.equal(null);
      expect(answer.headers.get('access-control-allow-methods')).to.equal(null);
      const read = await request(`${server.url}/health`, { headers: { Origin: 'https://app.example.com' } });
      expect(read.headers.get('access-control-allow-origin')).to.equal(null);
      expect(read.headers.get('access-control-expose-headers')).to.equal(null);
    });

    it('answers preflights from listed origins, and gives their requests (errors too) the CORS headers', async () => {
      server = await startTestServer({ CORS_ORIGINS: 'https://app.example.com, http://localhost:5173' });
      const answer = await preflight('https://app.example.com');
      expect(answer.status).to.equal(204);
      expect(answer.headers.get('access-control-allow-origin')).to.equal('https://app.example.com');
      expect(answer.headers.get('access-control-allow-methods')).to.include('POST').and.include('PATCH');
      const allowed = answer.headers.get('access-control-allow-headers')!.toLowerCase().split(/,\s*/);
      expect(allowed).to.include.members([
        'authorization',
        'x-api-key',
        'idempotency-key',
        'if-match',
        'content-type',
      ]);
      expect(Number(answer.headers.get('access-control-max-age'))).to.be.greaterThan(0);
      expect(answer.headers.get('vary')).to.include('Origin');

      const tenant = await withTenant(server);
      const created = await request(`${server.url}/v1/tenants/${tenant.tenantId}/observations`, {
        method: 'POST',
        body: fox,
        headers: { 'X-API-Key': tenant.adminKey, Origin: 'http://localhost:5173' },
      });
      expect(created.status).to.equal(201);
      expect(created.headers.get('access-control-allow-origin')).to.equal('http://localhost:5173');
      const exposed = created.headers.get('access-control-expose-headers')!.toLowerCase().split(/,\s*/);
      expect(exposed).to.include.members([
        'location',
        'etag',
        'x-position',
        'x-request-id',
        'ratelimit',
        'ratelimit-policy',
        'retry-after',
      ]);

      const refused = await request(`${server.url}/v1/tenants`, {
        headers: { Origin: 'https://app.example.com' },
      });
      expect(refused.status).to.equal(401);
      expect(refused.headers.get('access-control-allow-origin')).to.equal('https://app.example.com');

      // Another origin gets no CORS headers: the browser refuses it.
      const stranger = await preflight('https://evil.example.com');
      expect(stranger.headers.get('access-control-allow-origin')).to.equal(null);
      const strangerRead = await request(`${server.url}/health`, {
        headers: { Origin: 'https://evil.example.com' },
      });
      expect(strangerRead.headers.get('access-control-allow-origin')).to.equal(null);
    });

    it('allows every origin with CORS_ORIGINS=*', async () => {
      server = await startTestServer({ CORS_ORIGINS: '*' });
      const answer = await preflight('https://anywhere.example');
      expect(answer.status).to.equal(204);
      expect(answer.headers.get('access-control-allow-origin')).to.equal('*');
      const read = await request(`${server.url}/health`, { headers: { Origin: 'https://anywhere.example' } });
      expect(read.headers.get('access-control-allow-origin')).to.equal('*');
    });
  });

  describe('security headers', () => {
    it('are on every response: success, problem, unknown route, wrong method', async () => {
      server = await startTestServer();
      const health = await request(`${server.url}/health`);
      expect(health.status).to.equal(200);
      expectSecurityHeaders(health);
      expect(health.headers.get('strict-transport-security')).to.equal(null);

      const unknown = await request(`${server.url}/v1/nothing-here`, { method: 'POST', body: {} });
      expectProblem(unknown, 404, '/problems/not-found');
      expectSecurityHeaders(unknown);

      const tenant = await withTenant(server);
      const wrongMethod = await request(`${server.url}/v1/tenants/${tenant.tenantId}/observations`, {
        method: 'PUT',
        body: fox,
        headers: { 'X-API-Key': tenant.adminKey },
      });
      expectProblem(wrongMethod, 405, '/problems/method-not-allowed');
      expect(wrongMethod.headers.get('allow')).to.include('POST');
      expectSecurityHeaders(wrongMethod);

      expectSecurityHeaders(await request(`${server.url}/v1/tenants`), {});
    });

    it('leave a route its own Cache-Control', async () => {
      server = await startTestServer();
      const jwks = await request(`${server.url}/.well-known/jwks.json`);
      expect(jwks.status).to.equal(200);
      expectSecurityHeaders(jwks, { cacheControl: 'public, max-age=300' });
    });

    it('include Strict-Transport-Security when PUBLIC_URL is https', async () => {
      server = await startTestServer({ PUBLIC_URL: 'https://api.example.com' });
      const health = await request(`${server.url}/health`);
      expect(health.headers.get('strict-transport-security')).to.match(/^max-age=\d+/);
    });
  });

  describe('server time-outs', () => {
    /** A raw connection: what it receives, and when the server closes it. */
    const rawConnection = async (send: string) => {
      const { port } = new URL(server.url);
      const socket = connect(Number(port), '127.0.0.1');
      await new Promise<void>((resolve, reject) => {
        socket.once('connect', resolve);
        socket.once('error', reject);
      });
      let received = '';
      socket.setEncoding('utf8');
      socket.on('data', (chunk: string) => (received += chunk));
      socket.on('error', () => undefined);
      const started = Date.now();
      const closed = new Promise<number>((resolve) =>
        socket.once('close', () => resolve(Date.now() - started)),
      );
      socket.write(send);
      return { closed, received: () => received, socket };
    };

    beforeEach(async () => {
      server = await startTestServer({
        HTTP_HEADERS_TIMEOUT: '300ms',
        HTTP_REQUEST_TIMEOUT: '600ms',
        HTTP_KEEP_ALIVE_TIMEOUT: '300ms',
      });
    });

    it('cut off a client that does not finish its headers, with 408', async () => {
      const connection = await rawConnection('GET /health HTTP/1.1\r\nHost: localhost\r\nX-Slow: ');
      const ms = await connection.closed;
      expect(ms).to.be.within(200, 3000);
      expect(connection.received()).to.match(/^HTTP\/1\.1 408/);
    });

    it('cut off a client that sends half a body', async () => {
      const tenant = await withTenant(server);
      const body = JSON.stringify(fox);
      const connection = await rawConnection(
        `POST /v1/tenants/${tenant.tenantId}/observations HTTP/1.1\r\nHost: localhost\r\n` +
          `Content-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n` +
          `X-API-Key: ${tenant.adminKey}\r\nIdempotency-Key: half-a-body\r\n\r\n${body.slice(0, 10)}`,
      );
      const ms = await connection.closed;
      expect(ms).to.be.within(400, 3000);
      expect(connection.received()).to.not.match(/^HTTP\/1\.1 2/);
      // The key was released: the same request, whole, goes through.
      const whole = await request(`${server.url}/v1/tenants/${tenant.tenantId}/observations`, {
        method: 'POST',
        body: fox,
        headers: { 'X-API-Key': tenant.adminKey, 'Idempotency-Key': 'half-a-body' },
      });
      expect(whole.status).to.equal(201);
    });

    it('close an idle keep-alive connection', async () => {
      const connection = await rawConnection('GET /health HTTP/1.1\r\nHost: localhost\r\n\r\n');
      const ms = await connection.closed;
      expect(connection.received()).to.match(/^HTTP\/1\.1 200/);
      expect(ms).to.be.within(200, 3000);
    });
  });
});
