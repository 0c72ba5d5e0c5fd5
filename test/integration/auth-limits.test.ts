import { expect } from 'chai';
import { ConfigError, loadConfig } from '../../src/config.js';
import {
  basicAuth,
  createOAuthClient,
  createUser,
  expectUnauthorized,
  login,
  oauthToken,
  password,
  problemShape,
} from '../support/auth.js';
import { request, startTestServer, withTenant, type TestServer } from '../support/server.js';

type Tenant = Awaited<ReturnType<typeof withTenant>>;
type Response = Awaited<ReturnType<typeof request>>;

const from = (address: string) => ({ 'X-Forwarded-For': address });

const loginFrom = (server: TestServer, body: Record<string, unknown>, headers: Record<string, string> = {}) =>
  request(`${server.url}/v1/auth/token`, { method: 'POST', body, headers });

const expectTooMany = (response: Response) => {
  expect(response.status, JSON.stringify(response.body)).to.equal(429);
  expect(response.headers.get('content-type')).to.match(/^application\/problem\+json/);
  expect(Number(response.headers.get('retry-after'))).to.be.within(1, 900);
};

/** Runs the attempts a few at a time: each one is a full scrypt on the server. */
const inBatches = async <T>(count: number, attempt: (i: number) => Promise<T>, size = 4): Promise<T[]> => {
  const results: T[] = [];
  for (let start = 0; start < count; start += size) {
    const batch = Array.from({ length: Math.min(size, count - start) }, (_, k) => attempt(start + k));
    results.push(...(await Promise.all(batch)));
  }
  return results;
};

describe('TRUST_PROXY', () => {
  it('is off by default, takes a number of hops, and refuses anything else', () => {
    const base = { CURSOR_SECRET: 'test-secret' };
    expect(loadConfig(base).http.trustProxy).to.equal(0);
    expect(loadConfig({ ...base, TRUST_PROXY: 'off' }).http.trustProxy).to.equal(0);
    expect(loadConfig({ ...base, TRUST_PROXY: '2' }).http.trustProxy).to.equal(2);
    for (const value of ['true', 'yes', '-1', '1.5', '10.0.0.1']) {
      expect(() => loadConfig({ ...base, TRUST_PROXY: value }), value).to.throw(ConfigError, /TRUST_PROXY/);
    }
  });
});

describe('failed-authentication limits (issue 11, findings 3 and 4)', function () {
  this.timeout(60_000);
  let server: TestServer;
  let tenant: Tenant;
  const ada = 'ada@example.test';
  const bo = 'bo@example.test';

  const start = async (env: Record<string, string> = {}) => {
    server = await startTestServer(env);
    tenant = await withTenant(server, 'acme');
    await createUser(server, tenant, { email: ada, scopes: ['observations:read'] });
    await createUser(server, tenant, { email: bo, scopes: ['observations:read'] });
  };
  afterEach(async () => server?.close());

  describe('without TRUST_PROXY, where every client has the socket address', () => {
    beforeEach(() => start());

    it('does not stop another user’s correct login after 25 failed logins for many e-mails from the same address', async () => {
      const failures = await inBatches(25, (i) =>
        login(server, {
          email: `guess-${i}@example.test`,
          password: 'a wrong password',
          tenantId: tenant.tenantId,
        }),
      );
      for (const failed of failures) expectUnauthorized(failed);
      expect((await login(server, { email: bo, password, tenantId: tenant.tenantId })).status).to.equal(200);
    });

    it('does not stop another user’s correct login after 25 failed logins for one e-mail from the same address', async () => {
      const answers = await inBatches(25, () =>
        login(server, { email: ada, password: 'a wrong password', tenantId: tenant.tenantId }),
      );
      expect(answers.map((a) => a.status).filter((s) => s === 401)).to.have.length(5);
      expect((await login(server, { email: bo, password, tenantId: tenant.tenantId })).status).to.equal(200);
    });

    it('lets no more than 5 of 12 wrong logins sent at once through: each counts before its check', async () => {
      const answers = await Promise.all(
        Array.from({ length: 12 }, () =>
          login(server, { email: ada, password: 'a wrong password', tenantId: tenant.tenantId }),
        ),
      );
      const statuses = answers.map((a) => a.status).sort();
      expect(statuses).to.deep.equal([...Array(5).fill(401), ...Array(7).fill(429)]);
    });

    it('ignores X-Forwarded-For: a new forwarded address does not make a new client', async () => {
      for (let i = 0; i < 5; i += 1) {
        expectUnauthorized(
          await loginFrom(
            server,
            { email: ada, password: 'a wrong password', tenantId: tenant.tenantId },
            from(`203.0.113.${i}`),
          ),
        );
      }
      expectTooMany(
        await loginFrom(server, { email: ada, password, tenantId: tenant.tenantId }, from('203.0.113.99')),
      );
    });

    it('shares the limits between two processes on one DATA_DIR', async () => {
      // Behind one address, as two instances of one service: a second PUBLIC_URL would not start.
      const second = await startTestServer({ PUBLIC_URL: server.url }, { dataDir: server.dataDir });
      try {
        for (let i = 0; i < 5; i += 1) {
          expectUnauthorized(
            await login(server, { email: ada, password: 'a wrong password', tenantId: tenant.tenantId }),
          );
        }
        expectTooMany(await login(second, { email: ada, password, tenantId: tenant.tenantId }));
        expect((await login(second, { email: bo, password, tenantId: tenant.tenantId })).status).to.equal(
          200,
        );
      } finally {
        await second.close();
      }
    });
  });

  describe('with TRUST_PROXY=1 behind a TLS proxy', () => {
    beforeEach(() => start({ TRUST_PROXY: '1' }));

    it('does not stop the office’s other logins after 25 failed logins from the office’s address', async () => {
      const office = from('198.51.100.7');
      const failures = await inBatches(25, (i) =>
        loginFrom(
          server,
          { email: `guess-${i}@example.test`, password: 'a wrong password', tenantId: tenant.tenantId },
          office,
        ),
      );
      for (const failed of failures) expectUnauthorized(failed);
      const answers = await inBatches(10, () =>
        loginFrom(server, { email: ada, password: 'a wrong password', tenantId: tenant.tenantId }, office),
      );
      expect(answers.map((a) => a.status).filter((s) => s === 429)).to.have.length(5);
      expect(
        (await loginFrom(server, { email: bo, password, tenantId: tenant.tenantId }, office)).status,
      ).to.equal(200);
    });

    it('limits one e-mail sprayed from many addresses to 20 failures, then refuses even its right password', async () => {
      const failures = await inBatches(20, (i) =>
        loginFrom(
          server,
          { email: ada, password: `wrong password ${i}`, tenantId: tenant.tenantId },
          from(`203.0.113.${i + 1}`),
        ),
      );
      for (const failed of failures) expectUnauthorized(failed);
      const blocked = await loginFrom(
        server,
        { email: ada, password, tenantId: tenant.tenantId },
        from('192.0.2.200'),
      );
      expectTooMany(blocked);
      // An unknown e-mail is limited in the same way: a 429 does not tell that an account exists.
      const ghost = 'nobody@example.test';
      await inBatches(20, (i) =>
        loginFrom(
          server,
          { email: ghost, password: `wrong password ${i}`, tenantId: tenant.tenantId },
          from(`203.0.113.${i + 1}`),
        ),
      );
      const ghostBlocked = await loginFrom(
        server,
        { email: ghost, password, tenantId: tenant.tenantId },
        from('192.0.2.200'),
      );
      expect(problemShape(ghostBlocked)).to.deep.equal(problemShape(blocked));
      // Another account from the same addresses is not blocked.
      expect(
        (await loginFrom(server, { email: bo, password, tenantId: tenant.tenantId }, from('203.0.113.1')))
          .status,
      ).to.equal(200);
    });

    it('reads the client from the trusted hop only: addresses the client adds on the left do not help', async () => {
      for (let i = 0; i < 5; i += 1) {
        expectUnauthorized(
          await loginFrom(
            server,
            { email: ada, password: 'a wrong password', tenantId: tenant.tenantId },
            from(`10.0.0.${i}, 198.51.100.9`),
          ),
        );
      }
      expectTooMany(
        await loginFrom(
          server,
          { email: ada, password, tenantId: tenant.tenantId },
          from('10.9.9.9, 198.51.100.9'),
        ),
      );
      expect(
        (await loginFrom(server, { email: ada, password, tenantId: tenant.tenantId }, from('198.51.100.10')))
          .status,
      ).to.equal(200);
    });

    it('limits failed client authentications at /v1/oauth/token per client id and address', async () => {
      const worker = await createOAuthClient(server, tenant, ['observations:read']);
      const token = (secret: string, address: string) =>
        oauthToken(
          server,
          { grant_type: 'client_credentials' },
          { ...basicAuth(worker.clientId, secret), ...from(address) },
        );
      for (let i = 0; i < 10; i += 1) {
        expect((await token('not-the-secret', '203.0.113.5')).status).to.equal(401);
      }
      // The attacker's address is refused, even with the right secret; the integration elsewhere works.
      expectTooMany(await token(worker.clientSecret, '203.0.113.5'));
      expect((await token(worker.clientSecret, '198.51.100.20')).status).to.equal(200);
    });
  });

  describe('without TRUST_PROXY, at /v1/oauth/token', () => {
    beforeEach(() => start());

    it('answers 429 with Retry-After after 10 wrong secrets for one client from one address', async () => {
      const worker = await createOAuthClient(server, tenant, ['observations:read']);
      const form = { grant_type: 'client_credentials', client_id: worker.clientId };
      for (let i = 0; i < 10; i += 1) {
        expect((await oauthToken(server, { ...form, client_secret: `wrong-${i}` })).status).to.equal(401);
      }
      expectTooMany(await oauthToken(server, { ...form, client_secret: worker.clientSecret }));
    });
  });

  describe('the e-mail oracle across tenants', () => {
    beforeEach(() => start());

    it('gives the same answer for an e-mail in two tenants, in one, and in none, when no tenant is named', async () => {
      const other = await withTenant(server, 'globex');
      await createUser(server, other, { email: ada, scopes: ['observations:read'] });
      const twice = await login(server, { email: ada, password: 'a wrong password' });
      const once = await login(server, { email: bo, password: 'a wrong password' });
      const nowhere = await login(server, { email: 'nobody@example.test', password: 'a wrong password' });
      // A wrong password opens none of the accounts: one 401, whatever number of tenants the e-mail is in.
      expectUnauthorized(twice);
      expect(problemShape(once)).to.deep.equal(problemShape(twice));
      expect(problemShape(nowhere)).to.deep.equal(problemShape(twice));
    });

    it('gives one 401 for an e-mail of another tenant, an unknown e-mail and a wrong password', async () => {
      const other = await withTenant(server, 'globex');
      const elsewhere = await login(server, { email: ada, password, tenantId: other.tenantId });
      const unknown = await login(server, {
        email: 'nobody@example.test',
        password,
        tenantId: tenant.tenantId,
      });
      const wrong = await login(server, {
        email: ada,
        password: 'a wrong password',
        tenantId: tenant.tenantId,
      });
      expectUnauthorized(wrong);
      expect(problemShape(elsewhere)).to.deep.equal(problemShape(wrong));
      expect(problemShape(unknown)).to.deep.equal(problemShape(wrong));
    });

    it('lets a tenant admin create a user whose e-mail exists elsewhere exactly as a new one, and learn nothing by logging in', async () => {
      const other = await withTenant(server, 'globex');
      const existing = await createUser(server, other, { email: ada, scopes: ['observations:read'] });
      const fresh = await createUser(server, other, {
        email: 'new@example.test',
        scopes: ['observations:read'],
      });
      expect(Object.keys(existing).sort()).to.deep.equal(Object.keys(fresh).sort());
      // Its own user logs in with its own password, in its own tenant, whether the e-mail exists elsewhere or not.
      for (const email of [ada, 'new@example.test']) {
        expect((await login(server, { email, password, tenantId: other.tenantId })).status).to.equal(200);
      }
    });

    it('takes about as long for an unknown e-mail as for a wrong password (one scrypt either way)', async () => {
      const time = async (email: string) => {
        const started = process.hrtime.bigint();
        expectUnauthorized(
          await login(server, { email, password: 'a wrong password', tenantId: tenant.tenantId }),
        );
        return Number(process.hrtime.bigint() - started) / 1e6;
      };
      await time('warm-up@example.test');
      const median = (xs: number[]) => xs.sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
      const known: number[] = [];
      const unknown: number[] = [];
      for (let i = 0; i < 4; i += 1) {
        known.push(await time(i % 2 ? ada : bo));
        unknown.push(await time(`nobody-${i}@example.test`));
      }
      const ratio = median(unknown) / median(known);
      expect(ratio, `unknown ${median(unknown)} ms, known ${median(known)} ms`).to.be.within(0.5, 2);
    });
  });

  describe('a refused refresh', () => {
    beforeEach(() => start());

    it('appends nothing when the user is disabled', async () => {
      const session = await login(server, { email: ada, password, tenantId: tenant.tenantId });
      expect(session.status).to.equal(200);
      const sessionId = (session.body.refreshToken as string).split('.')[1]!;
      const stream = `session-${tenant.tenantId}_${sessionId}`;
      const user = (await server.stores.eventStore.readStream(stream))[0]!.data as { userId: string };
      const disabled = await request(
        `${server.url}/v1/tenants/${tenant.tenantId}/users/${user.userId}/disable`,
        {
          method: 'POST',
          headers: { 'X-API-Key': tenant.adminKey },
        },
      );
      expect(disabled.status).to.equal(200);
      const before = await server.stores.eventStore.headPosition();
      const refused = await request(`${server.url}/v1/auth/refresh`, {
        method: 'POST',
        body: { refreshToken: session.body.refreshToken },
      });
      expectUnauthorized(refused);
      expect((await server.stores.eventStore.readStream(stream)).map((e) => e.type)).to.deep.equal([
        'SessionStarted',
      ]);
      expect(await server.stores.eventStore.headPosition()).to.equal(before);
    });

    it('appends nothing when the session was revoked for reuse, and the reuse itself still revokes', async () => {
      const session = await login(server, { email: ada, password, tenantId: tenant.tenantId });
      const refresh = (refreshToken: string) =>
        request(`${server.url}/v1/auth/refresh`, { method: 'POST', body: { refreshToken } });
      const renewed = await refresh(session.body.refreshToken as string);
      expect(renewed.status).to.equal(200);
      expectUnauthorized(await refresh(session.body.refreshToken as string));
      const before = await server.stores.eventStore.headPosition();
      expectUnauthorized(await refresh(renewed.body.refreshToken as string));
      expectUnauthorized(await refresh(session.body.refreshToken as string));
      expect(await server.stores.eventStore.headPosition()).to.equal(before);
    });
  });
});
