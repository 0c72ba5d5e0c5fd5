import Database from 'better-sqlite3';
import { expect } from 'chai';
import { randomBytes } from 'node:crypto';
import { existsSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import {
  basicAuth,
  bearer,
  createOAuthClient,
  createUser,
  expectForbidden,
  login,
  oauthToken,
  password,
} from '../support/auth.js';
import { ConfigError, loadConfig } from '../../src/config.js';
import { tempDir } from '../support/adapters.js';
import { startTs } from '../support/process.js';
import { request, startTestServer, withTenant, type TestServer } from '../support/server.js';

type Tenant = Awaited<ReturnType<typeof withTenant>>;

/** The bytes of idempotency.db and its write-ahead log, as an attacker reading the files would see them. */
const idempotencyFiles = (server: TestServer) =>
  ['idempotency.db', 'idempotency.db-wal', 'idempotency.db-shm']
    .map((name) => join(server.dataDir, name))
    .filter((file) => existsSync(file));

const everyStoredByte = (server: TestServer) => {
  const db = new Database(join(server.dataDir, 'idempotency.db'), { readonly: true });
  try {
    const rows = db.prepare('SELECT * FROM idempotency_keys').all() as Record<string, unknown>[];
    return [
      ...rows.map((row) =>
        Object.values(row)
          .map((value) => (Buffer.isBuffer(value) ? value.toString('latin1') : String(value)))
          .join('\n'),
      ),
      ...idempotencyFiles(server).map((file) => readFileSync(file).toString('latin1')),
    ].join('\n');
  } finally {
    db.close();
  }
};

/**
 * Issue 11, findings 1 and 5, on the running service: a replayed Idempotency-Key never hands a stored
 * answer to a credential that may not make the request, and the kept answers hold no secret in clear.
 */
describe('Idempotency-Key and authorization', function () {
  this.timeout(30_000);
  let server: TestServer;
  let tenant: Tenant;
  /** Tokens of one OAuth client: the same identity (`client:…`), with different scopes. */
  let adminToken: Record<string, string>;
  let readerToken: Record<string, string>;
  let adminAndReaderToken: Record<string, string>;

  before(async () => {
    server = await startTestServer();
    tenant = await withTenant(server);
    const client = await createOAuthClient(server, tenant, ['admin', 'observations:read']);
    const token = async (scope: string) => {
      const response = await oauthToken(
        server,
        { grant_type: 'client_credentials', scope },
        basicAuth(client.clientId, client.clientSecret),
      );
      expect(response.status, JSON.stringify(response.body)).to.equal(200);
      return bearer(response.body.access_token as string);
    };
    adminToken = await token('admin');
    readerToken = await token('observations:read');
    adminAndReaderToken = await token('admin observations:read');
  });
  after(async () => server.close());

  const post = (path: string, body: unknown, headers: Record<string, string>, key: string) =>
    request(`${server.url}/v1/tenants/${tenant.tenantId}${path}`, {
      method: 'POST',
      body,
      headers: { ...headers, 'Idempotency-Key': key },
    });

  for (const [path, body, secretField] of [
    ['/api-keys', { name: 'stolen?', scopes: ['admin'] }, 'key'],
    ['/oauth-clients', { name: 'stolen?', scopes: ['admin'] }, 'clientSecret'],
    ['/users', { email: 'new-admin@acme.test', password, scopes: ['admin'] }, 'id'],
  ] as const) {
    describe(`a replay of POST …${path}`, () => {
      const key = `exploit${path}`;
      let first: Awaited<ReturnType<typeof post>>;
      before(async () => {
        first = await post(path, body, adminToken, key);
        expect(first.status, JSON.stringify(first.body)).to.equal(201);
        expect(first.body[secretField]).to.be.a('string');
      });

      it('by a token of the same client narrowed to observations:read answers 403, with nothing stored', async () => {
        const replayed = await post(path, body, readerToken, key);
        expectForbidden(replayed, 'admin');
        expect(replayed.headers.get('idempotency-replayed')).to.equal(null);
        expect(JSON.stringify(replayed.body)).not.to.contain(String(first.body[secretField]));
      });

      it('by the same credential replays the answer, secret included', async () => {
        const replayed = await post(path, body, adminToken, key);
        expect(replayed.status).to.equal(201);
        expect(replayed.headers.get('idempotency-replayed')).to.equal('true');
        expect(replayed.body).to.deep.equal(first.body);
      });

      it('by a token of the same client with another scope set that may call the route answers 422', async () => {
        const reused = await post(path, body, adminAndReaderToken, key);
        expect(reused.status, JSON.stringify(reused.body)).to.equal(422);
        expect(reused.body.type).to.equal('/problems/idempotency-key-reused');
        expect(JSON.stringify(reused.body)).not.to.contain(String(first.body[secretField]));
      });

      it('through another spelling of the path replays the same route', async () => {
        const upper = await request(`${server.url}/V1/TENANTS/${tenant.tenantId}${path.toUpperCase()}`, {
          method: 'POST',
          body,
          headers: { ...adminToken, 'Idempotency-Key': key },
        });
        expect(upper.status).to.equal(201);
        expect(upper.body).to.deep.equal(first.body);
      });
    });
  }

  it('keeps nothing for POST /V1/AUTH/TOKEN or /V1/AUTH/REFRESH sent with a credential: a replay gets fresh tokens', async () => {
    const user = await createUser(server, tenant, { email: 'ada@acme.test', scopes: ['observations:read'] });
    // A client that sends its credential with every request, the login and refresh included.
    const { accessToken } = (await login(server, { email: user.email, password, tenantId: tenant.tenantId }))
      .body as { accessToken: string };
    const send = (path: string, body: unknown, key: string) =>
      request(`${server.url}${path}`, {
        method: 'POST',
        body,
        headers: { ...bearer(accessToken), 'Idempotency-Key': key },
      });
    const credentials = { email: user.email, password, tenantId: tenant.tenantId };
    const first = await send('/V1/AUTH/TOKEN', credentials, 'login-upper');
    expect(first.status, JSON.stringify(first.body)).to.equal(200);
    const second = await send('/V1/AUTH/TOKEN', credentials, 'login-upper');
    expect(second.status).to.equal(200);
    expect(second.headers.get('idempotency-replayed')).to.equal(null);
    expect(second.body.refreshToken).to.not.equal(first.body.refreshToken);
    expect(
      (await send('/v1/Auth/Token', credentials, 'login-upper')).headers.get('idempotency-replayed'),
    ).to.equal(null);

    const refreshToken = second.body.refreshToken as string;
    const refreshed = await send('/V1/AUTH/REFRESH', { refreshToken }, 'refresh-upper');
    expect(refreshed.status, JSON.stringify(refreshed.body)).to.equal(200);
    const replayed = await send('/V1/AUTH/REFRESH', { refreshToken }, 'refresh-upper');
    expect(replayed.headers.get('idempotency-replayed')).to.equal(null);
    expect(replayed.status).to.equal(401); // a refresh token is used once: its reuse is refused, not replayed

    const stored = everyStoredByte(server);
    expect(stored).not.to.contain('login-upper');
    expect(stored).not.to.contain('refresh-upper');
    for (const token of [first.body.refreshToken, first.body.accessToken, refreshed.body.refreshToken])
      expect(stored).not.to.contain(token as string);
  });

  it('keeps idempotency.db at mode 0600, with no secret in clear in its rows or files', async () => {
    const created = await post('/api-keys', { name: 'kept', scopes: ['cv:read'] }, adminToken, 'sealed');
    expect(created.status).to.equal(201);
    const client = await post(
      '/oauth-clients',
      { name: 'kept', scopes: ['cv:read'] },
      adminToken,
      'sealed-2',
    );
    expect(client.status).to.equal(201);
    const secret = created.body.key as string;
    const stored = everyStoredByte(server);
    expect(stored).to.contain('sealed'); // the rows are there...
    for (const value of [secret, secret.split('.').at(-1)!, client.body.clientSecret as string])
      expect(stored, value).not.to.contain(value); // ...but not the secrets
    for (const file of idempotencyFiles(server))
      expect((statSync(file).mode & 0o777).toString(8), file).to.equal('600');
  });
});

describe('Idempotency-Key and the platform key', function () {
  this.timeout(30_000);
  let server: TestServer;
  after(async () => server.close());

  it('keeps the first tenant admin key sealed, and replays it to the platform key only', async () => {
    server = await startTestServer();
    const create = (headers: Record<string, string>) =>
      request(`${server.url}/v1/tenants`, {
        method: 'POST',
        body: { name: 'sealed', notificationEmail: 'ops@sealed.test' },
        headers: { ...headers, 'Idempotency-Key': 'tenant-1' },
      });
    const first = await create({ 'X-API-Key': server.platformAdminKey });
    expect(first.status).to.equal(201);
    const adminApiKey = first.body.adminApiKey as string;
    expect(everyStoredByte(server)).not.to.contain(adminApiKey);
    const again = await create({ 'X-API-Key': server.platformAdminKey });
    expect(again.body.adminApiKey).to.equal(adminApiKey);
    const byTenantAdmin = await create({ 'X-API-Key': adminApiKey });
    expectForbidden(byTenantAdmin, undefined);
    expect(JSON.stringify(byTenantAdmin.body)).not.to.contain(adminApiKey);
  });
});

describe('IDEMPOTENCY_SECRET_KEY', function () {
  this.timeout(30_000);

  it('is required in production, like the other secrets', () => {
    expect(() =>
      loadConfig({
        NODE_ENV: 'production',
        DATA_DIR: '/tmp/unused',
        PLATFORM_ADMIN_KEY: randomBytes(32).toString('hex'),
        CURSOR_SECRET: randomBytes(32).toString('hex'),
        SIGNING_KEYS_FILE: '/tmp/unused/keys.json',
        WEBHOOK_SECRET_KEY: randomBytes(32).toString('hex'),
      }),
    ).to.throw(ConfigError, 'IDEMPOTENCY_SECRET_KEY');
  });

  it('once changed, no longer replays the answers kept under the old key: their keys answer 422, and nothing runs twice', async () => {
    const { dir, remove } = tempDir();
    let server = await startTestServer(
      { IDEMPOTENCY_SECRET_KEY: randomBytes(32).toString('hex') },
      { dataDir: dir },
    );
    try {
      const tenant = await withTenant(server);
      const create = () =>
        request(`${server.url}/v1/tenants/${tenant.tenantId}/api-keys`, {
          method: 'POST',
          body: { name: 'once', scopes: ['cv:read'] },
          headers: { 'X-API-Key': tenant.adminKey, 'Idempotency-Key': 'rotated' },
        });
      const first = await create();
      expect(first.status).to.equal(201);
      expect((await create()).body.key).to.equal(first.body.key);
      await server.close();
      // A key changed on purpose is recorded first (docs/operations.md#shared-secrets), or the start refuses it.
      const changed = { IDEMPOTENCY_SECRET_KEY: randomBytes(32).toString('hex') };
      const record = startTs('src/cli/main.ts', ['secrets', 'record'], {
        ...changed,
        DATA_DIR: dir,
        CURSOR_SECRET: 'test-secret',
      });
      expect(await record.exited, record.output.stderr).to.equal(0);
      expect(record.output.stdout.trim().split('\n')[0]).to.equal('Recorded IDEMPOTENCY_SECRET_KEY');
      server = await startTestServer(changed, { dataDir: dir });
      const head = await server.stores.eventStore.headPosition();
      const after = await create();
      expect(after.status, JSON.stringify(after.body)).to.equal(422);
      expect(after.body.type).to.equal('/problems/idempotency-key-reused');
      expect(JSON.stringify(after.body)).not.to.contain(first.body.key as string);
      expect(await server.stores.eventStore.headPosition()).to.equal(head);
    } finally {
      await server.close();
      remove();
    }
  });
});
