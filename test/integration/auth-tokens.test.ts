import { expect } from 'chai';
import { createHmac, createPublicKey, generateKeyPairSync, type JsonWebKey } from 'node:crypto';
import { statSync, writeFileSync } from 'node:fs';
import jwt from 'jsonwebtoken';
import { retireKey, rotateKeys } from '../../src/auth/signing-keys.js';
import {
  bearer,
  decodeJwt,
  eventually,
  expectUnauthorized,
  loggedIn,
  login,
  password,
  problemShape,
  readSigningKeys,
  refresh,
  signingKeysFile,
} from '../support/auth.js';
import { testClock, type TestClock } from '../support/clock.js';
import { captureLogs } from '../support/logs.js';
import { request, startTestServer, withTenant, type TestServer } from '../support/server.js';

type Tenant = Awaited<ReturnType<typeof withTenant>>;

const b64 = (value: object | string) =>
  Buffer.from(typeof value === 'string' ? value : JSON.stringify(value)).toString('base64url');

describe('access and refresh tokens', () => {
  let server: TestServer;
  let tenant: Tenant;
  const observations = () => `${server.url}/v1/tenants/${tenant.tenantId}/observations`;
  const listWith = (token: string) => request(observations(), { headers: bearer(token) });

  let logs: ReturnType<typeof captureLogs>;
  beforeEach(async () => {
    logs = captureLogs('warn');
    server = await startTestServer({}, { logger: logs.logger });
    tenant = await withTenant(server);
  });
  afterEach(async () => server.close());

  describe('logging in', () => {
    it('answers 200 with a bearer access token, a refresh token and the lifetime, never cached', async () => {
      await loggedIn(server, tenant, ['observations:read'], 'ada@example.test');
      const response = await login(server, {
        email: 'ada@example.test',
        password,
        tenantId: tenant.tenantId,
      });
      expect(response.status).to.equal(200);
      expect(response.headers.get('cache-control')).to.equal('no-store');
      expect(Object.keys(response.body).sort()).to.deep.equal(
        ['accessToken', 'expiresIn', 'refreshToken', 'tokenType'].sort(),
      );
      expect(response.body).to.include({ tokenType: 'Bearer', expiresIn: 900 });
      expect(response.body.refreshToken).to.match(/^ort_/);
      expect((await listWith(response.body.accessToken as string)).status).to.equal(200);
    });

    it('issues an ES256 JWT with iss, aud, sub, tenantId, scope, jti, iat, exp 15 minutes on, sid and kid', async () => {
      const { user, accessToken } = await loggedIn(server, tenant, ['observations:read', 'cv:read']);
      const { header, payload } = decodeJwt(accessToken);
      const [key] = readSigningKeys(server);
      expect(header).to.deep.equal({ alg: 'ES256', typ: 'JWT', kid: key!.kid });
      expect(payload).to.include({
        iss: server.url,
        aud: 'observation-service',
        sub: `user:${user.id}`,
        tenantId: tenant.tenantId,
        scope: 'observations:read cv:read',
      });
      expect(payload.jti).to.match(/^[0-9a-f-]{36}$/);
      expect(payload.sid).to.match(/^s_[0-9a-z]{26}$/);
      expect(Number(payload.exp) - Number(payload.iat)).to.equal(900);
      expect(Math.abs(Number(payload.iat) - Date.now() / 1000)).to.be.lessThan(5);
    });

    it('issues tokens that verify with the public key published at /.well-known/jwks.json', async () => {
      const { accessToken } = await loggedIn(server, tenant, ['observations:read']);
      const jwks = await request(`${server.url}/.well-known/jwks.json`);
      expect(jwks.status).to.equal(200);
      const keys = jwks.body.keys as (JsonWebKey & { kid: string })[];
      expect(keys).to.have.length(1);
      expect(keys[0]).to.include({ kty: 'EC', crv: 'P-256', alg: 'ES256', use: 'sig' });
      expect(keys[0]).not.to.have.property('d');
      const publicKey = createPublicKey({ key: keys[0]!, format: 'jwk' });
      const claims = jwt.verify(accessToken, publicKey, {
        algorithms: ['ES256'],
        issuer: server.url,
        audience: 'observation-service',
      });
      expect(claims).to.have.property('tenantId', tenant.tenantId);
    });
  });

  describe('refreshing', () => {
    it('answers a refresh token with a new pair, whose access token works', async () => {
      const first = await loggedIn(server, tenant, ['observations:read']);
      const response = await refresh(server, first.refreshToken);
      expect(response.status, JSON.stringify(response.body)).to.equal(200);
      expect(response.body).to.include({ tokenType: 'Bearer', expiresIn: 900 });
      expect(response.body.refreshToken).not.to.equal(first.refreshToken);
      expect(response.body.accessToken).not.to.equal(first.accessToken);
      expect(decodeJwt(response.body.accessToken as string).payload.sid).to.equal(
        decodeJwt(first.accessToken).payload.sid,
      );
      expect((await listWith(response.body.accessToken as string)).status).to.equal(200);
      // The rotated token refreshes in turn.
      expect((await refresh(server, response.body.refreshToken as string)).status).to.equal(200);
    });

    it('revokes the whole family when a used refresh token is presented again', async () => {
      const first = await loggedIn(server, tenant, ['observations:read']);
      const second = await refresh(server, first.refreshToken);
      expect(second.status).to.equal(200);

      expectUnauthorized(await refresh(server, first.refreshToken));
      // The thief's replay ended the session: the legitimate holder's newer token is refused too...
      expectUnauthorized(await refresh(server, second.body.refreshToken as string));
      // ...and within a second, so are the access tokens of that session, old and new.
      await eventually(
        async () => {
          expectUnauthorized(await listWith(first.accessToken));
          expectUnauthorized(await listWith(second.body.accessToken as string));
        },
        { timeoutMs: 1000 },
      );
    });

    it('leaves the same user’s other sessions working when one family is revoked', async () => {
      const stolen = await loggedIn(server, tenant, ['observations:read'], 'bo@example.test');
      const other = await login(server, { email: 'bo@example.test', password, tenantId: tenant.tenantId });
      expect((await refresh(server, stolen.refreshToken)).status).to.equal(200);
      expectUnauthorized(await refresh(server, stolen.refreshToken));
      await eventually(async () => expectUnauthorized(await listWith(stolen.accessToken)), {
        timeoutMs: 1000,
      });
      expect((await listWith(other.body.accessToken as string)).status).to.equal(200);
      expect((await refresh(server, other.body.refreshToken as string)).status).to.equal(200);
    });

    it('lets only one of two simultaneous refreshes with the same token succeed, and never answers 5xx', async () => {
      const { refreshToken } = await loggedIn(server, tenant, ['observations:read']);
      const answers = await Promise.all([1, 2, 3, 4].map(() => refresh(server, refreshToken)));
      const statuses = answers.map((answer) => answer.status).sort();
      expect(
        statuses.filter((status) => status === 200),
        JSON.stringify(statuses),
      ).to.have.length(1);
      expect(
        statuses.every((status) => status === 200 || status === 401),
        JSON.stringify(statuses),
      ).to.equal(true);
    });

    it('refuses the refresh token of a disabled user', async () => {
      const { user, refreshToken } = await loggedIn(server, tenant, ['observations:read']);
      const disabled = await request(`${server.url}/v1/tenants/${tenant.tenantId}/users/${user.id}/disable`, {
        method: 'POST',
        headers: { 'X-API-Key': tenant.adminKey },
      });
      expect(disabled.status).to.equal(200);
      expectUnauthorized(await refresh(server, refreshToken));
    });

    it('refuses an access token presented as a refresh token, and a made-up one, alike', async () => {
      const { accessToken, refreshToken } = await loggedIn(server, tenant, ['observations:read']);
      const forged = refreshToken.replace(/.{4}$/, 'AAAA');
      const answers = [
        await refresh(server, accessToken),
        await refresh(server, forged),
        await refresh(server, 'ort_t_x.s_y.z'),
      ];
      for (const answer of answers) expectUnauthorized(answer);
      expect(problemShape(answers[0]!)).to.deep.equal(problemShape(answers[1]!));
      // A refused made-up token must not have burnt the real one.
      expect((await refresh(server, refreshToken)).status).to.equal(200);
    });
  });

  describe('signing out', () => {
    const logout = (refreshToken: unknown) =>
      request(`${server.url}/v1/auth/logout`, { method: 'POST', body: { refreshToken } });

    it('ends the session: its refresh token, and within a second its access tokens, stop working', async () => {
      const session = await loggedIn(server, tenant, ['observations:read'], 'cy@example.test');
      const other = await login(server, { email: 'cy@example.test', password, tenantId: tenant.tenantId });
      const signedOut = await logout(session.refreshToken);
      expect(signedOut.status).to.equal(204);
      expect(signedOut.headers.get('cache-control')).to.equal('no-store');
      expectUnauthorized(await refresh(server, session.refreshToken));
      await eventually(async () => expectUnauthorized(await listWith(session.accessToken)), {
        timeoutMs: 1000,
      });
      // The same user's other session goes on.
      expect((await listWith(other.body.accessToken as string)).status).to.equal(200);
      expect((await refresh(server, other.body.refreshToken as string)).status).to.equal(200);
      const revoked = await server.stores.eventStore.readAll({
        filter: { tenantId: tenant.tenantId, eventTypes: ['SessionRevoked'] },
      });
      expect(revoked.events.map((event) => (event.data as { reason: string }).reason)).to.deep.equal([
        'signed out',
      ]);
    });

    it('answers 204 to a token that ends nothing, and records nothing: spent, made-up, or said twice', async () => {
      const session = await loggedIn(server, tenant, ['observations:read']);
      const renewed = await refresh(server, session.refreshToken);
      const [prefix, tenantId, id, secret] = (renewed.body.refreshToken as string).split(/[_.]/);
      const forged = `${prefix}_${tenantId}.${id}.${secret!.replace(/^./, (c) => (c === 'A' ? 'B' : 'A'))}`;
      // Another secret for the same session ends nothing, and leaves the session working.
      expect((await logout(forged)).status).to.equal(204);
      expect((await logout('ort_t_nobody.s_nobody.secret')).status).to.equal(204);
      expect((await logout('not a token')).status).to.equal(204);
      expect((await refresh(server, renewed.body.refreshToken as string)).status).to.equal(200);
      const none = await server.stores.eventStore.readAll({
        filter: { tenantId: tenant.tenantId, eventTypes: ['SessionRevoked'] },
      });
      expect(none.events).to.deep.equal([]);
      // Signing out twice: one revocation.
      const again = await loggedIn(server, tenant, ['observations:read'], 'bo@example.test');
      expect((await logout(again.refreshToken)).status).to.equal(204);
      expect((await logout(again.refreshToken)).status).to.equal(204);
      const once = await server.stores.eventStore.readAll({
        filter: { tenantId: tenant.tenantId, eventTypes: ['SessionRevoked'] },
      });
      expect(once.events).to.have.length(1);
    });

    it('refuses a body without a refresh token as a problem (400)', async () => {
      const refused = await request(`${server.url}/v1/auth/logout`, { method: 'POST', body: {} });
      expect(refused.status).to.equal(400);
      expect(refused.headers.get('content-type')).to.match(/^application\/problem\+json/);
    });
  });

  describe('expiry', () => {
    // The service's clock, moved past each expiry instead of waiting for it.
    let clock: TestClock;
    let shortLived: TestServer;
    beforeEach(async () => {
      clock = testClock();
      shortLived = await startTestServer({ ACCESS_TOKEN_TTL: '1s' }, { options: { clock } });
    });
    afterEach(async () => shortLived.close());

    it('refuses a refresh token once its session has expired', async () => {
      const sessions = await startTestServer({ REFRESH_TOKEN_TTL: '1s' }, { options: { clock } });
      try {
        const owner = await withTenant(sessions);
        const { refreshToken } = await loggedIn(sessions, owner, ['observations:read']);
        const renewed = await refresh(sessions, refreshToken);
        expect(renewed.status).to.equal(200);
        clock.advance(1100);
        expectUnauthorized(await refresh(sessions, renewed.body.refreshToken as string));
      } finally {
        await sessions.close();
      }
    });

    it('refuses an access token once it has expired, even one that was accepted (and cached) before', async () => {
      const owner = await withTenant(shortLived);
      const { accessToken, refreshToken } = await loggedIn(shortLived, owner, ['observations:read']);
      const list = () =>
        request(`${shortLived.url}/v1/tenants/${owner.tenantId}/observations`, {
          headers: bearer(accessToken),
        });
      expect((await list()).status).to.equal(200);
      // Past the second of the token's lifetime, and past the second JWT timestamps are rounded to.
      clock.advance(2100);
      expectUnauthorized(await list());
      // The refresh token outlives it.
      const renewed = await refresh(shortLived, refreshToken);
      expect(renewed.status).to.equal(200);
      expect(renewed.body.expiresIn).to.equal(1);
    });
  });

  describe('signing-key rotation', () => {
    it('signs with the new key after a rotation, verifies the old one until it is retired, then refuses it', async () => {
      const before = await loggedIn(server, tenant, ['observations:read']);
      const oldKid = decodeJwt(before.accessToken).header.kid as string;
      expect((await listWith(before.accessToken)).status).to.equal(200);

      const added = rotateKeys(signingKeysFile(server));
      await eventually(async () => {
        const jwks = await request(`${server.url}/.well-known/jwks.json`);
        expect(jwks.body.keys.map((key: { kid: string }) => key.kid)).to.deep.equal([oldKid, added.kid]);
      });
      const after = await loggedIn(server, tenant, ['observations:read']);
      expect(decodeJwt(after.accessToken).header.kid).to.equal(added.kid);
      expect((await listWith(after.accessToken)).status).to.equal(200);
      expect((await listWith(before.accessToken)).status).to.equal(200);

      expect(retireKey(signingKeysFile(server), oldKid)).to.equal(true);
      await eventually(async () => {
        const jwks = await request(`${server.url}/.well-known/jwks.json`);
        expect(jwks.body.keys.map((key: { kid: string }) => key.kid)).to.deep.equal([added.kid]);
      });
      expectUnauthorized(await listWith(before.accessToken));
      expect((await listWith(after.accessToken)).status).to.equal(200);
    });

    it('keeps the keyring it has when the file is replaced by something unreadable', async () => {
      const before = await loggedIn(server, tenant, ['observations:read']);
      writeFileSync(signingKeysFile(server), '{ "keys": [', { mode: 0o600 });
      // The service has read the broken file once it says so; until then a pass would prove nothing.
      await logs.waitFor('signing keyring not reloaded');
      expect((await listWith(before.accessToken)).status).to.equal(200);
      const after = await loggedIn(server, tenant, ['observations:read']);
      expect(decodeJwt(after.accessToken).header.kid).to.equal(decodeJwt(before.accessToken).header.kid);
      expect((await listWith(after.accessToken)).status).to.equal(200);
    });

    it('keeps the development keyring readable by its owner only', () => {
      expect(statSync(signingKeysFile(server)).mode & 0o777).to.equal(0o600);
    });

    it('refuses to retire the only active key', () => {
      const [only] = readSigningKeys(server);
      expect(() => retireKey(signingKeysFile(server), only!.kid)).to.throw(/only active key/);
    });
  });

  describe('bad credentials, each refused with the same 401 and never a 500', () => {
    let good: { accessToken: string; refreshToken: string; user: { id: string } };
    let claims: Record<string, unknown>;
    let kid: string;
    let privateKeyPem: string;
    let jwk: JsonWebKey;

    beforeEach(async () => {
      good = await loggedIn(server, tenant, ['observations:read']);
      claims = decodeJwt(good.accessToken).payload;
      const [key] = readSigningKeys(server);
      kid = key!.kid;
      privateKeyPem = key!.privateKeyPem;
      jwk = ((await request(`${server.url}/.well-known/jwks.json`)).body.keys as JsonWebKey[])[0]!;
    });

    /** Signed with the service's real private key: only the claims make these wrong. */
    const signed = (overrides: Record<string, unknown>, options: jwt.SignOptions = {}) =>
      jwt.sign({ ...claims, ...overrides }, privateKeyPem, { algorithm: 'ES256', keyid: kid, ...options });
    const hs256 = (secret: string) => {
      const unsigned = `${b64({ alg: 'HS256', typ: 'JWT', kid })}.${b64(claims)}`;
      return `${unsigned}.${createHmac('sha256', secret).update(unsigned).digest('base64url')}`;
    };
    const publicPem = () =>
      createPublicKey({ key: jwk, format: 'jwk' }).export({ type: 'spki', format: 'pem' });

    it('accepts a token the test signs with the real key and the real claims (the forgeries below are fair)', async () => {
      expect((await listWith(signed({ jti: 'control' }))).status).to.equal(200);
    });

    const now = () => Math.floor(Date.now() / 1000);
    const forgeries: [string, () => string][] = [
      ['an alg "none" token', () => `${b64({ alg: 'none', typ: 'JWT', kid })}.${b64(claims)}.`],
      ['an alg "none" token without kid', () => `${b64({ alg: 'none' })}.${b64(claims)}.`],
      ['an HS256 token signed with the PEM public key', () => hs256(publicPem().toString())],
      ['an HS256 token signed with the JWK as JSON', () => hs256(JSON.stringify(jwk))],
      [
        'an HS256 token signed with the public key by jsonwebtoken',
        () => jwt.sign(claims, publicPem().toString(), { algorithm: 'HS256', keyid: kid }),
      ],
      ['a token for another audience', () => signed({ aud: 'some-other-service' })],
      ['a token from another issuer', () => signed({ iss: 'https://evil.example' })],
      ['an expired token', () => signed({ iat: now() - 3600, exp: now() - 1800 })],
      ['a token not valid yet', () => signed({ nbf: now() + 3600 })],
      ['a token with a scope the service does not know', () => signed({ scope: 'observations:read root' })],
      ['a token without a tenant', () => signed({ tenantId: undefined })],
      ['a token whose subject is no user or client', () => signed({ sub: 'root' })],
      [
        'a token signed by a key of the same curve that the service does not hold, under its kid',
        () => {
          const { privateKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
          return jwt.sign(claims, privateKey, { algorithm: 'ES256', keyid: kid });
        },
      ],
      ['a token naming an unknown kid', () => signed({}, { keyid: 'no-such-key' })],
      [
        'a token whose signature was tampered with',
        () => {
          const [h, p, s] = good.accessToken.split('.');
          const flipped = s![5] === 'A' ? 'B' : 'A';
          return `${h}.${p}.${s!.slice(0, 5)}${flipped}${s!.slice(6)}`;
        },
      ],
      [
        'a token whose payload was changed to claim admin',
        () => {
          const [h, , s] = good.accessToken.split('.');
          return `${h}.${b64({ ...claims, scope: 'admin' })}.${s}`;
        },
      ],
      [
        'a token whose payload is not JSON',
        () => `${b64({ alg: 'ES256', typ: 'JWT', kid })}.${b64('not json')}.c2ln`,
      ],
      ['a token whose header is not JSON', () => `${b64('not json')}.${b64(claims)}.c2ln`],
      ['a refresh token presented as an access token', () => good.refreshToken],
      ['a bare word', () => 'garbage'],
      ['a token of several kilobytes', () => `${good.accessToken}${'A'.repeat(6000)}`],
    ];

    for (const [name, forge] of forgeries) {
      it(`refuses ${name}`, async () => {
        const response = await listWith(forge());
        expectUnauthorized(response, name);
        // The same answer as for any other bad token: nothing says which part was wrong.
        expect(problemShape(response)).to.deep.equal(problemShape(await listWith('garbage')));
      });
    }

    const headers: [string, Record<string, string>][] = [
      ['a Bearer scheme without a token', { Authorization: 'Bearer' }],
      ['a Bearer scheme with an empty token', { Authorization: 'Bearer ' }],
      ['a Bearer token with a space inside', { Authorization: 'Bearer abc def' }],
      ['a Basic scheme', { Authorization: `Basic ${b64('user:pass')}` }],
      ['an unknown scheme', { Authorization: 'Token abc' }],
      ['a token without any scheme', { Authorization: 'eyJhbGciOiJFUzI1NiJ9.e30.c2ln' }],
      ['an empty X-API-Key', { 'X-API-Key': '' }],
      ['an X-API-Key of several kilobytes', { 'X-API-Key': `obs_${'a'.repeat(8000)}` }],
      ['an Authorization header of several kilobytes', { Authorization: `Bearer ${'a'.repeat(8000)}` }],
      ['an API key that was never issued', { 'X-API-Key': `obs_t_x.k_${'0'.repeat(26)}.${'A'.repeat(43)}` }],
    ];

    for (const [name, sent] of headers) {
      it(`refuses ${name} with 401`, async () => {
        const response = await request(observations(), { headers: sent });
        expectUnauthorized(response, name);
      });
    }

    it('refuses an API key sent as a bearer token, and an access token sent as an API key', async () => {
      const key = await tenant.key(['observations:read']);
      // Each is accepted first in its own place, so a cache of verified credentials has seen it.
      expect((await request(observations(), { headers: { 'X-API-Key': key } })).status).to.equal(200);
      expect((await listWith(good.accessToken)).status).to.equal(200);
      expectUnauthorized(await request(observations(), { headers: bearer(key) }));
      expectUnauthorized(await request(observations(), { headers: { 'X-API-Key': good.accessToken } }));
      expectUnauthorized(await request(observations(), { headers: bearer(server.platformAdminKey) }));
    });

    it('refuses an API key and a bearer token sent together, even when both are valid', async () => {
      const response = await request(observations(), {
        headers: { 'X-API-Key': await tenant.key(['observations:read']), ...bearer(good.accessToken) },
      });
      expectUnauthorized(response);
    });

    it('refuses an access token whose user was disabled, within a second', async () => {
      expect((await listWith(good.accessToken)).status).to.equal(200);
      const disabled = await request(
        `${server.url}/v1/tenants/${tenant.tenantId}/users/${good.user.id}/disable`,
        {
          method: 'POST',
          headers: { 'X-API-Key': tenant.adminKey },
        },
      );
      expect(disabled.status).to.equal(200);
      await eventually(async () => expectUnauthorized(await listWith(good.accessToken)), { timeoutMs: 1000 });
    });
  });
});
