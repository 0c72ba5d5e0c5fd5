import { expect } from 'chai';
import {
  bearer,
  clientToken,
  createOAuthClient,
  createUser,
  eventually,
  expectForbidden,
  expectUnauthorized,
  loggedIn,
  login,
  oauthToken,
  basicAuth,
  password,
  problemShape,
} from '../support/auth.js';
import { request, startTestServer, withTenant, type TestServer } from '../support/server.js';

type Tenant = Awaited<ReturnType<typeof withTenant>>;

describe('authentication and credentials', () => {
  let server: TestServer;
  let tenant: Tenant;
  const tenantUrl = (path = '', id = tenant.tenantId) => `${server.url}/v1/tenants/${id}${path}`;
  const asAdmin = (init: Parameters<typeof request>[1] = {}) => ({
    ...init,
    headers: { 'X-API-Key': tenant.adminKey, ...init.headers },
  });
  const asPlatform = (init: Parameters<typeof request>[1] = {}) => ({
    ...init,
    headers: { 'X-API-Key': server.platformAdminKey, ...init.headers },
  });

  /**
   * A login without a tenant finds accounts through the users read model: wait until it lists the user,
   * rather than by logging in, since each failed login counts against the e-mail's limit.
   */
  const listed = (owner: Tenant, email: string) =>
    eventually(
      async () => {
        const users = await request(`${server.url}/v1/tenants/${owner.tenantId}/users`, {
          headers: { 'X-API-Key': owner.adminKey },
        });
        expect(users.body.data.map((user: { email: string }) => user.email)).to.include(email);
      },
      { timeoutMs: 10_000 },
    );

  beforeEach(async () => {
    server = await startTestServer();
    tenant = await withTenant(server, 'acme');
  });
  afterEach(async () => server.close());

  describe('tenants', () => {
    it('lets the platform key create a tenant, answering 201 with its id and an admin key shown once', async () => {
      const response = await request(
        `${server.url}/v1/tenants`,
        asPlatform({ method: 'POST', body: { name: 'Globex', notificationEmail: 'ops@globex.test' } }),
      );
      expect(response.status).to.equal(201);
      expect(response.body).to.include({ name: 'Globex', notificationEmail: 'ops@globex.test' });
      expect(response.body.id).to.match(/^t_[0-9a-z]{26}$/);
      expect(response.body.adminApiKey).to.match(new RegExp(`^obs_${response.body.id}\\.k_`));
      expect(response.headers.get('location')).to.equal(`/v1/tenants/${response.body.id}`);
      expect(response.headers.get('cache-control')).to.equal('no-store');

      // The key is the tenant's admin: it reads its tenant, and is not shown again.
      const read = await request(`${server.url}/v1/tenants/${response.body.id}`, {
        headers: { 'X-API-Key': response.body.adminApiKey },
      });
      expect(read.status).to.equal(200);
      expect(read.body).to.include({ id: response.body.id, name: 'Globex' });
      expect(JSON.stringify(read.body)).not.to.include(response.body.adminApiKey.split('.')[2]);
    });

    it('leaves no tenant behind when its last append fails, so that a retry makes one whole tenant', async () => {
      const store = server.stores.eventStore;
      const append = store.appendToStream.bind(store);
      let appends = 0;
      store.appendToStream = (stream, events, expected) =>
        ++appends === 2
          ? Promise.reject(new Error('the disk filled up between the two appends'))
          : append(stream, events, expected);
      const create = () =>
        request(
          `${server.url}/v1/tenants`,
          asPlatform({ method: 'POST', body: { name: 'Globex', notificationEmail: 'ops@globex.test' } }),
        );
      try {
        expect((await create()).status).to.equal(500);
      } finally {
        store.appendToStream = append;
      }
      expect(appends).to.equal(2);
      const retried = await create();
      expect(retried.status).to.equal(201);
      await eventually(async () => {
        const list = await request(`${server.url}/v1/tenants`, asPlatform());
        expect(list.body.data.map((t: { name: string }) => t.name)).to.deep.equal(['acme', 'Globex']);
      });
    });

    it('lets the platform key list tenants and read any one of them', async () => {
      const other = await withTenant(server, 'globex');
      await eventually(async () => {
        const list = await request(`${server.url}/v1/tenants`, asPlatform());
        expect(list.status).to.equal(200);
        expect(list.body.data.map((t: { id: string }) => t.id)).to.deep.equal([
          tenant.tenantId,
          other.tenantId,
        ]);
        expect(JSON.stringify(list.body)).not.to.match(/adminApiKey|obs_/);
      });
      const read = await request(tenantUrl('', other.tenantId), asPlatform());
      expect(read.status).to.equal(200);
      expect(read.body).to.include({ id: other.tenantId, name: 'globex' });
    });

    it('answers 404 to the platform key for a tenant that does not exist', async () => {
      const response = await request(tenantUrl('', 't_00000000000000000000000000'), asPlatform());
      expect(response.status).to.equal(404);
    });

    it('answers 400 naming the field to a tenant without a valid notification e-mail', async () => {
      const response = await request(
        `${server.url}/v1/tenants`,
        asPlatform({ method: 'POST', body: { name: 'Globex', notificationEmail: 'nope' } }),
      );
      expect(response.status).to.equal(400);
      expect(response.body.errors.map((e: { path: string }) => e.path)).to.deep.equal(['notificationEmail']);
    });

    it('lets a tenant admin read its own tenant but answers 404 for another, as for one that does not exist', async () => {
      const other = await withTenant(server, 'globex');
      expect((await request(tenantUrl(), asAdmin())).status).to.equal(200);
      const foreign = await request(tenantUrl('', other.tenantId), asAdmin());
      const missing = await request(tenantUrl('', 't_00000000000000000000000000'), asAdmin());
      expect(foreign.status).to.equal(404);
      expect(problemShape(foreign)).to.deep.equal(problemShape(missing));
    });

    it('answers 403 to the platform key on observation routes', async () => {
      const response = await request(tenantUrl('/observations'), asPlatform());
      expectForbidden(response, 'observations:read');
    });

    it('does not let a tenant admin create or list tenants', async () => {
      expectForbidden(
        await request(
          `${server.url}/v1/tenants`,
          asAdmin({ method: 'POST', body: { name: 'Mine', notificationEmail: 'me@mine.test' } }),
        ),
        undefined,
      );
      expectForbidden(await request(`${server.url}/v1/tenants`, asAdmin()), undefined);
    });

    it('answers 401 to a wrong platform key', async () => {
      expectUnauthorized(
        await request(`${server.url}/v1/tenants`, {
          headers: { 'X-API-Key': `${server.platformAdminKey}x` },
        }),
      );
    });
  });

  describe('users', () => {
    it('creates a user with 201 and never returns the password or its hash', async () => {
      const created = await request(
        tenantUrl('/users'),
        asAdmin({
          method: 'POST',
          body: { email: 'Ada@Example.test', password, scopes: ['observations:read'] },
        }),
      );
      expect(created.status).to.equal(201);
      expect(created.body).to.include({
        email: 'ada@example.test',
        tenantId: tenant.tenantId,
        status: 'active',
      });
      expect(created.body.scopes).to.deep.equal(['observations:read']);
      expect(created.headers.get('location')).to.equal(
        `/v1/tenants/${tenant.tenantId}/users/${created.body.id}`,
      );

      const one = await request(tenantUrl(`/users/${created.body.id}`), asAdmin());
      expect(one.status).to.equal(200);
      expect(one.body).to.deep.equal(created.body);
      const list = await eventually(async () => {
        const response = await request(tenantUrl('/users'), asAdmin());
        expect(response.body.data).to.have.length(1);
        return response;
      });
      for (const body of [created.body, one.body, list.body]) {
        const text = JSON.stringify(body);
        expect(text).not.to.include(password);
        expect(text).not.to.match(/scrypt|passwordHash|hash/i);
      }
    });

    it('lets the platform key create a tenant’s first user', async () => {
      const response = await request(
        tenantUrl('/users'),
        asPlatform({ method: 'POST', body: { email: 'root@acme.test', password, scopes: ['admin'] } }),
      );
      expect(response.status).to.equal(201);
      const session = await login(server, { email: 'root@acme.test', password, tenantId: tenant.tenantId });
      expect(session.status).to.equal(200);
      expect(
        (await request(tenantUrl('/users'), { headers: bearer(session.body.accessToken) })).status,
      ).to.equal(200);
    });

    it('answers 409 to a second user with the same e-mail in the tenant, whatever its case', async () => {
      await createUser(server, tenant, { email: 'ada@example.test', scopes: ['cv:read'] });
      const again = await request(
        tenantUrl('/users'),
        asAdmin({ method: 'POST', body: { email: 'ADA@example.test', password, scopes: ['cv:read'] } }),
      );
      expect(again.status).to.equal(409);
    });

    it('refuses a short password, an unknown scope and an empty scope list, naming each field', async () => {
      const response = await request(
        tenantUrl('/users'),
        asAdmin({ method: 'POST', body: { email: 'ada@example.test', password: 'short', scopes: ['root'] } }),
      );
      expect(response.status).to.equal(400);
      expect(response.body.errors.map((e: { path: string }) => e.path).sort()).to.deep.equal([
        'password',
        'scopes.0',
      ]);
      expect(response.body.errors.find((e: { path: string }) => e.path === 'scopes.0').message).to.match(
        /^must be one of observations:read, .*admin$/,
      );
      for (const scopes of [[], ['cv:read', 'cv:read'], 'admin']) {
        const refused = await request(
          tenantUrl('/users'),
          asAdmin({ method: 'POST', body: { email: 'ada@example.test', password, scopes } }),
        );
        expect(refused.status).to.equal(400);
        expect(refused.body.errors).to.deep.equal([
          { path: 'scopes', message: 'must be a non-empty list of distinct scopes' },
        ]);
      }
    });

    it('disables a user: the user can no longer log in, and its tokens stop working within a second', async () => {
      const { user, accessToken } = await loggedIn(server, tenant, ['observations:read'], 'ada@example.test');
      expect((await request(tenantUrl('/observations'), { headers: bearer(accessToken) })).status).to.equal(
        200,
      );

      const disabled = await request(tenantUrl(`/users/${user.id}/disable`), asAdmin({ method: 'POST' }));
      expect(disabled.status).to.equal(200);
      expect(disabled.body).to.include({ status: 'disabled' });
      expect(disabled.body.disabledAt).to.be.a('string');

      await eventually(
        async () =>
          expectUnauthorized(await request(tenantUrl('/observations'), { headers: bearer(accessToken) })),
        { timeoutMs: 1000 },
      );
      const again = await login(server, { email: 'ada@example.test', password, tenantId: tenant.tenantId });
      expectUnauthorized(again);
    });

    it('answers 404 for a user id of the tenant that does not exist', async () => {
      expect((await request(tenantUrl('/users/u_nope'), asAdmin())).status).to.equal(404);
      expect(
        (await request(tenantUrl('/users/u_nope/disable'), asAdmin({ method: 'POST' }))).status,
      ).to.equal(404);
    });
  });

  describe('logging in', () => {
    it('logs in with the e-mail and password alone, as the specification has it', async () => {
      const user = await createUser(server, tenant, {
        email: 'ada@example.test',
        scopes: ['observations:read'],
      });
      await listed(tenant, 'ada@example.test');
      const answer = await login(server, { email: 'ADA@example.test', password });
      expect(answer.status).to.equal(200);
      const payload = JSON.parse(Buffer.from(answer.body.accessToken.split('.')[1], 'base64url').toString());
      expect(payload).to.include({ sub: `user:${user.id}`, tenantId: tenant.tenantId });
    });

    it('without a tenant, logs in to the account the password opens, and asks for the tenant when it opens several', async () => {
      const other = await withTenant(server, 'globex');
      const third = await withTenant(server, 'initech');
      await createUser(server, tenant, { email: 'ada@example.test', scopes: ['observations:read'] });
      const theirs = await createUser(server, other, {
        email: 'ada@example.test',
        scopes: ['observations:read'],
        secret: 'another long password',
      });
      await createUser(server, third, { email: 'ada@example.test', scopes: ['observations:read'] });
      await listed(third, 'ada@example.test');
      const opened = await login(server, { email: 'ada@example.test', password: 'another long password' });
      expect(opened.status).to.equal(200);
      const payload = JSON.parse(Buffer.from(opened.body.accessToken.split('.')[1], 'base64url').toString());
      expect(payload).to.include({ sub: `user:${theirs.id}`, tenantId: other.tenantId });
      // The same password opens two accounts: only someone who knows it learns that, and must name one.
      const both = await login(server, { email: 'ada@example.test', password });
      expect(both.status).to.equal(400);
      expect(both.body.errors.map((e: { path: string }) => e.path)).to.deep.equal(['tenantId']);
      const named = await login(server, { email: 'ada@example.test', password, tenantId: third.tenantId });
      expect(named.status).to.equal(200);
    });

    it('answers an e-mail of another tenant and an unknown e-mail alike, in the same time', async () => {
      const other = await withTenant(server, 'globex');
      const count = 6;
      const elsewhere = Array.from({ length: count }, (_, index) => `elsewhere-${index}@example.test`);
      for (const email of elsewhere)
        await createUser(server, other, { email, scopes: ['observations:read'] });
      await listed(other, elsewhere.at(-1)!);
      // Each e-mail once, wrong password, alternating, so that load changes hit both kinds alike.
      const timed = async (email: string, body: Record<string, unknown>) => {
        const started = performance.now();
        const answer = await login(server, { email, ...body });
        return { answer, ms: performance.now() - started };
      };
      const known: Awaited<ReturnType<typeof timed>>[] = [];
      const unknown: Awaited<ReturnType<typeof timed>>[] = [];
      for (let index = 0; index < count - 1; index++) {
        known.push(await timed(elsewhere[index]!, { password: 'not the password at all' }));
        unknown.push(await timed(`nobody-${index}@example.test`, { password: 'not the password at all' }));
      }
      // And with the tenant named: the e-mail exists, but not in this tenant.
      const inThisTenant = await login(server, {
        email: elsewhere[0]!,
        password,
        tenantId: tenant.tenantId,
      });
      for (const { answer } of [...known, ...unknown]) {
        expectUnauthorized(answer);
        expect(problemShape(answer)).to.deep.equal(problemShape(unknown[0]!.answer));
      }
      expect(problemShape(inThisTenant)).to.deep.equal(problemShape(unknown[0]!.answer));
      // Both check one scrypt hash (the account's or the decoy): a login that skipped it for an unknown
      // e-mail would answer in a fraction of the time.
      const median = (runs: { ms: number }[]) =>
        runs.map((run) => run.ms).sort((a, b) => a - b)[runs.length >> 1]!;
      const [a, b] = [median(known), median(unknown)];
      expect(Math.min(a, b) / Math.max(a, b), `medians ${a.toFixed(0)} and ${b.toFixed(0)} ms`).to.be.above(
        0.5,
      );
    });

    it('logs in to the tenant named when the e-mail belongs to users of several tenants', async () => {
      const other = await withTenant(server, 'globex');
      const mine = await createUser(server, tenant, {
        email: 'ada@example.test',
        scopes: ['observations:read'],
      });
      await createUser(server, other, { email: 'ada@example.test', scopes: ['observations:read'] });
      const named = await login(server, { email: 'ada@example.test', password, tenantId: other.tenantId });
      expect(named.status).to.equal(200);
      const payload = JSON.parse(Buffer.from(named.body.accessToken.split('.')[1], 'base64url').toString());
      expect(payload.tenantId).to.equal(other.tenantId);
      // Right after creation: login reads the user's stream, not a read model that may lag.
      const here = await login(server, { email: 'ada@example.test', password, tenantId: tenant.tenantId });
      const hereToken = JSON.parse(Buffer.from(here.body.accessToken.split('.')[1], 'base64url').toString());
      expect(hereToken).to.include({ sub: `user:${mine.id}`, tenantId: tenant.tenantId });
    });

    it('accepts the e-mail in any case', async () => {
      await createUser(server, tenant, { email: 'ada@example.test', scopes: ['observations:read'] });
      const response = await login(server, {
        email: 'ADA@Example.Test',
        password,
        tenantId: tenant.tenantId,
      });
      expect(response.status).to.equal(200);
    });

    it('answers a wrong password, an unknown e-mail and an unknown tenant with the same 401', async () => {
      await createUser(server, tenant, { email: 'ada@example.test', scopes: ['observations:read'] });
      const wrong = await login(server, {
        email: 'ada@example.test',
        password: 'not the password at all',
        tenantId: tenant.tenantId,
      });
      const unknown = await login(server, { email: 'bo@example.test', password, tenantId: tenant.tenantId });
      const nowhere = await login(server, { email: 'ada@example.test', password, tenantId: 'not-a-tenant' });
      expectUnauthorized(wrong);
      expect(problemShape(unknown)).to.deep.equal(problemShape(wrong));
      expect(problemShape(nowhere)).to.deep.equal(problemShape(wrong));
    });

    it('answers 400, not 401, to a login without a password', async () => {
      const response = await login(server, { email: 'ada@example.test' });
      expect(response.status).to.equal(400);
    });

    it('blocks an e-mail from an address after 5 failed logins for 15 minutes, with 429 and Retry-After, even with the right password', async () => {
      await createUser(server, tenant, { email: 'ada@example.test', scopes: ['observations:read'] });
      await createUser(server, tenant, { email: 'bo@example.test', scopes: ['observations:read'] });
      const attempt = (email: string, secret: string) =>
        login(server, { email, password: secret, tenantId: tenant.tenantId });
      for (let i = 0; i < 5; i += 1)
        expectUnauthorized(await attempt('ada@example.test', 'a wrong password'));

      const blocked = await attempt('ada@example.test', password);
      expect(blocked.status).to.equal(429);
      expect(blocked.headers.get('content-type')).to.match(/^application\/problem\+json/);
      const retryAfter = Number(blocked.headers.get('retry-after'));
      expect(retryAfter).to.be.within(890, 900);
      // The same e-mail in another case is the same e-mail.
      expect((await attempt('ADA@example.test', password)).status).to.equal(429);
      // Other e-mails from the same address are not blocked yet.
      expect((await attempt('bo@example.test', password)).status).to.equal(200);
    });

    it('forgets earlier failures of an e-mail after a successful login', async () => {
      await createUser(server, tenant, { email: 'ada@example.test', scopes: ['observations:read'] });
      const attempt = (secret: string) =>
        login(server, { email: 'ada@example.test', password: secret, tenantId: tenant.tenantId });
      for (let i = 0; i < 4; i += 1) expectUnauthorized(await attempt('a wrong password'));
      expect((await attempt(password)).status).to.equal(200);
      for (let i = 0; i < 4; i += 1) expectUnauthorized(await attempt('a wrong password'));
      expect((await attempt(password)).status).to.equal(200);
    });

    it('blocks a client address after 200 failed logins, whatever the e-mails and X-Forwarded-For', async function () {
      this.timeout(120_000);
      await createUser(server, tenant, { email: 'ada@example.test', scopes: ['observations:read'] });
      for (let start = 0; start < 200; start += 4) {
        const batch = [0, 1, 2, 3].map((k) =>
          request(`${server.url}/v1/auth/token`, {
            method: 'POST',
            body: {
              email: `guess-${start + k}@example.test`,
              password: 'a wrong password',
              tenantId: tenant.tenantId,
            },
            // The service does not sit behind a proxy here: a forwarded-for header must not make a new client.
            headers: { 'X-Forwarded-For': `203.0.113.${(start + k) % 250}` },
          }),
        );
        for (const failed of await Promise.all(batch)) expectUnauthorized(failed);
      }
      const blocked = await login(server, { email: 'ada@example.test', password, tenantId: tenant.tenantId });
      expect(blocked.status).to.equal(429);
      expect(Number(blocked.headers.get('retry-after'))).to.be.within(1, 900);
    });
  });

  describe('API keys', () => {
    it('shows the key once at creation, then lists and reads it without any secret', async () => {
      const created = await request(
        tenantUrl('/api-keys'),
        asAdmin({ method: 'POST', body: { name: 'importer', scopes: ['observations:write'] } }),
      );
      expect(created.status).to.equal(201);
      expect(created.headers.get('cache-control')).to.equal('no-store');
      expect(created.body).to.include({ name: 'importer', status: 'active', tenantId: tenant.tenantId });
      expect(created.body.key).to.match(new RegExp(`^obs_${tenant.tenantId}\\.${created.body.id}\\.`));
      const secret = (created.body.key as string).split('.')[2]!;

      const one = await request(tenantUrl(`/api-keys/${created.body.id}`), asAdmin());
      expect(one.status).to.equal(200);
      expect(one.body).not.to.have.property('key');
      const list = await eventually(async () => {
        const response = await request(tenantUrl('/api-keys'), asAdmin());
        // The initial admin key and this one.
        expect(response.body.data).to.have.length(2);
        return response;
      });
      for (const body of [one.body, list.body]) {
        expect(JSON.stringify(body)).not.to.include(secret);
        expect(JSON.stringify(body)).not.to.match(/secretHash|"key"/);
      }
    });

    it('authenticates with the key, and refuses the same key with one character of the secret changed', async () => {
      const key = await tenant.key(['observations:read']);
      expect((await request(tenantUrl('/observations'), { headers: { 'X-API-Key': key } })).status).to.equal(
        200,
      );
      const changed = `${key.slice(0, -1)}${key.endsWith('A') ? 'B' : 'A'}`;
      expectUnauthorized(await request(tenantUrl('/observations'), { headers: { 'X-API-Key': changed } }));
    });

    it('answers a key sent as a bearer token with a 401 that says where keys go', async () => {
      const key = await tenant.key(['observations:read']);
      const asBearer = await request(tenantUrl('/observations'), {
        headers: { Authorization: `Bearer ${key}` },
      });
      expectUnauthorized(asBearer);
      expect(asBearer.body.detail).to.include('X-API-Key');
      expect(asBearer.headers.get('www-authenticate')).to.include('error="invalid_token"');
      // Any other refused bearer token gets no such hint.
      const other = await request(tenantUrl('/observations'), {
        headers: { Authorization: 'Bearer abc.def.ghi' },
      });
      expect(other.body.detail).not.to.include('X-API-Key');
    });

    it('revokes a key with DELETE: 204, status revoked, and 401 for the key within a second', async () => {
      const key = await tenant.key(['observations:read']);
      const id = key.split('.')[1]!;
      const list = () => request(tenantUrl('/observations'), { headers: { 'X-API-Key': key } });
      expect((await list()).status).to.equal(200);

      const deleted = await request(tenantUrl(`/api-keys/${id}`), asAdmin({ method: 'DELETE' }));
      expect(deleted.status).to.equal(204);
      await eventually(async () => expectUnauthorized(await list()), { timeoutMs: 1000 });
      const read = await request(tenantUrl(`/api-keys/${id}`), asAdmin());
      expect(read.body).to.include({ status: 'revoked' });
      expect(read.body.revokedAt).to.be.a('string');
    });

    it('answers 404 to revoking a key that does not exist', async () => {
      const response = await request(
        tenantUrl(`/api-keys/k_${'0'.repeat(26)}`),
        asAdmin({ method: 'DELETE' }),
      );
      expect(response.status).to.equal(404);
    });

    it('treats admin as every scope within its own tenant', async () => {
      const admin = await tenant.key(['admin']);
      const created = await request(tenantUrl('/observations'), {
        method: 'POST',
        body: { observedAt: '2026-05-01T09:30:00Z' },
        headers: { 'X-API-Key': admin },
      });
      expect(created.status).to.equal(201);
      expect(
        (await request(tenantUrl('/observations'), { headers: { 'X-API-Key': admin } })).status,
      ).to.equal(200);
    });

    it('answers 403 naming the missing scope to a key with only another scope', async () => {
      const reader = await tenant.key(['observations:read']);
      const response = await request(tenantUrl('/observations'), {
        method: 'POST',
        body: { observedAt: '2026-05-01T09:30:00Z' },
        headers: { 'X-API-Key': reader },
      });
      expectForbidden(response, 'observations:write');
      expect(response.body.detail).to.include('observations:write');
    });
  });

  describe('OAuth clients', () => {
    it('shows the client secret once at creation, then lists and reads the client without it', async () => {
      const created = await request(
        tenantUrl('/oauth-clients'),
        asAdmin({ method: 'POST', body: { name: 'worker', scopes: ['observations:read'] } }),
      );
      expect(created.status).to.equal(201);
      expect(created.headers.get('cache-control')).to.equal('no-store');
      expect(created.body.clientId).to.equal(`${tenant.tenantId}.${created.body.id}`);
      expect(created.body.clientSecret).to.match(/^[A-Za-z0-9_-]{43}$/);

      const one = await request(tenantUrl(`/oauth-clients/${created.body.id}`), asAdmin());
      expect(one.status).to.equal(200);
      const list = await eventually(async () => {
        const response = await request(tenantUrl('/oauth-clients'), asAdmin());
        expect(response.body.data).to.have.length(1);
        return response;
      });
      for (const body of [one.body, list.body]) {
        expect(JSON.stringify(body)).not.to.include(created.body.clientSecret);
        expect(JSON.stringify(body)).not.to.match(/secretHash|clientSecret/);
      }
    });

    it('revokes a client with DELETE: its secret no longer gets tokens, and its tokens stop working within a second', async () => {
      const { client, accessToken } = await clientToken(server, tenant, ['observations:read']);
      const list = () => request(tenantUrl('/observations'), { headers: bearer(accessToken) });
      expect((await list()).status).to.equal(200);

      const deleted = await request(tenantUrl(`/oauth-clients/${client.id}`), asAdmin({ method: 'DELETE' }));
      expect(deleted.status).to.equal(204);
      await eventually(async () => expectUnauthorized(await list()), { timeoutMs: 1000 });
      const token = await oauthToken(
        server,
        { grant_type: 'client_credentials' },
        basicAuth(client.clientId, client.clientSecret),
      );
      expect(token.status).to.equal(401);
      expect(token.body.error).to.equal('invalid_client');
    });
  });

  describe('tenant isolation', () => {
    let other: Tenant;
    beforeEach(async () => {
      other = await withTenant(server, 'globex');
    });

    it('answers 404 to every kind of credential of tenant A on tenant B’s paths, as for an unknown tenant', async () => {
      const scopes = ['admin'];
      const credentials: [string, Record<string, string>][] = [
        ['API key', { 'X-API-Key': await tenant.key(scopes) }],
        ['user token', bearer((await loggedIn(server, tenant, scopes)).accessToken)],
        ['client token', bearer((await clientToken(server, tenant, scopes)).accessToken)],
      ];
      const paths = ['', '/users', '/api-keys', '/oauth-clients', '/observations'];
      for (const [kind, headers] of credentials) {
        for (const path of paths) {
          const foreign = await request(tenantUrl(path, other.tenantId), { headers });
          const unknown = await request(tenantUrl(path, 't_00000000000000000000000000'), { headers });
          expect(foreign.status, `${kind} on ${path}`).to.equal(404);
          expect(problemShape(foreign), `${kind} on ${path}`).to.deep.equal(problemShape(unknown));
          // The same credential works on its own tenant.
          expect((await request(tenantUrl(path), { headers })).status, `${kind} on own ${path}`).to.equal(
            200,
          );
        }
        const write = await request(tenantUrl('/observations', other.tenantId), {
          method: 'POST',
          body: { observedAt: '2026-05-01T09:30:00Z' },
          headers,
        });
        expect(write.status, kind).to.equal(404);
      }
    });

    it('does not let tenant A’s admin read, disable or revoke tenant B’s credentials by id', async () => {
      const user = await createUser(server, other, { email: 'ada@example.test', scopes: ['cv:read'] });
      const client = await createOAuthClient(server, other, ['cv:read']);
      const keyId = other.adminKey.split('.')[1]!;
      for (const path of [`/users/${user.id}`, `/api-keys/${keyId}`, `/oauth-clients/${client.id}`]) {
        // On B's path, A's key is a stranger; on A's own path, B's ids do not exist.
        expect((await request(tenantUrl(path, other.tenantId), asAdmin())).status).to.equal(404);
        expect((await request(tenantUrl(path), asAdmin())).status).to.equal(404);
      }
      expect(
        (await request(tenantUrl(`/users/${user.id}/disable`), asAdmin({ method: 'POST' }))).status,
      ).to.equal(404);
      expect((await request(tenantUrl(`/api-keys/${keyId}`), asAdmin({ method: 'DELETE' }))).status).to.equal(
        404,
      );
      // B's admin key still works.
      expect(
        (await request(tenantUrl('', other.tenantId), { headers: { 'X-API-Key': other.adminKey } })).status,
      ).to.equal(200);
    });
  });
});
