import { expect } from 'chai';
import { openApiDocument } from '../../src/openapi/document.js';
import { createUser, password } from '../support/auth.js';
import { request, startTestServer, withTenant, type TestServer } from '../support/server.js';

/**
 * The credentials table of the /docs page (the document's description), followed as written: each row's
 * "how to get it" is done with exactly the fields the row names, and the credential it gives is sent in
 * the header the row shows, to a route that needs one.
 */
const rows = (): Map<string, { header: string; how: string }> => {
  const text = (openApiDocument({ publicUrl: 'http://127.0.0.1:3000' }).info as { description: string })
    .description;
  const table = text.slice(text.indexOf('| method | header | how to get it |'));
  return new Map(
    table
      .split('\n')
      .slice(2)
      .filter((line) => line.startsWith('| '))
      .map((line) => line.split('|').map((cell) => cell.trim().replace(/^`|`$/g, '')))
      .map(([, method, header, how]) => [method!, { header: header!, how: how! }]),
  );
};

describe('the credentials table of /docs, followed as written', () => {
  let server: TestServer;
  let tenant: Awaited<ReturnType<typeof withTenant>>;
  const table = rows();
  /** A route of the tenant that needs a credential with a scope every row's credential here has. */
  const readWith = (headers: Record<string, string>) =>
    request(`${server.url}/v1/tenants/${tenant.tenantId}/observations`, { headers });
  /** The header as the row writes it, with the credential in place of its placeholders, which it must fit. */
  const headerOf = (row: string, credential: string): Record<string, string> => {
    const [name, form] = table.get(row)!.header.split(': ') as [string, string];
    const value = `${form.slice(0, form.search(/obs_|</))}${credential}`;
    const pattern = form.replace(/[.*+?^${}()|[\]\\]/g, '\\$&').replace(/<[^>]+>/g, '\\S+');
    expect(value, `${row}: ${form}`).to.match(new RegExp(`^${pattern}$`));
    return { [name]: value };
  };

  before(async () => {
    server = await startTestServer();
    tenant = await withTenant(server);
  });
  after(() => server.close());

  it('has the four rows it is followed by', () => {
    expect([...table.keys()]).to.deep.equal(['API key', 'user token', 'client token', 'platform key']);
  });

  it('API key: created as the row says, sent in X-API-Key', async () => {
    expect(table.get('API key')!.how).to.match(/^POST \/v1\/tenants\/\{tenantId\}\/api-keys/);
    const created = await request(`${server.url}/v1/tenants/${tenant.tenantId}/api-keys`, {
      method: 'POST',
      body: { name: 'docs', scopes: ['observations:read'] },
      headers: { 'X-API-Key': tenant.adminKey },
    });
    expect(created.status, JSON.stringify(created.body)).to.equal(201);
    expect(created.body.key).to.match(/^obs_t_[0-9a-z]+\.k_[0-9a-z]+\.[\w-]+$/);
    expect((await readWith(headerOf('API key', created.body.key))).status).to.equal(200);
  });

  it('user token: POST /v1/auth/token with exactly {email, password}, sent as a bearer token', async () => {
    const how = table.get('user token')!.how;
    expect(how).to.equal('POST /v1/auth/token {email, password}');
    await createUser(server, tenant, { email: 'docs@example.test', scopes: ['observations:read'] });
    // Without a tenant the account is found through the users read model: wait until it lists the user.
    for (const deadline = Date.now() + 10_000; ;) {
      const users = await request(`${server.url}/v1/tenants/${tenant.tenantId}/users`, {
        headers: { 'X-API-Key': tenant.adminKey },
      });
      if (users.body.data.some((user: { email: string }) => user.email === 'docs@example.test')) break;
      if (Date.now() > deadline) throw new Error('the users read model never listed the user');
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    const fields = /\{([^}]*)\}/
      .exec(how)![1]!
      .split(',')
      .map((field) => field.trim());
    const values: Record<string, string> = { email: 'docs@example.test', password };
    const body = Object.fromEntries(fields.map((field) => [field, values[field]!]));
    const login = await request(`${server.url}/v1/auth/token`, { method: 'POST', body });
    expect(login.status, JSON.stringify(login.body)).to.equal(200);
    expect((await readWith(headerOf('user token', login.body.accessToken))).status).to.equal(200);
  });

  it('client token: OAuth 2.0 client credentials at POST /v1/oauth/token, sent as a bearer token', async () => {
    expect(table.get('client token')!.how).to.match(/^POST \/v1\/oauth\/token/);
    const client = await request(`${server.url}/v1/tenants/${tenant.tenantId}/oauth-clients`, {
      method: 'POST',
      body: { name: 'docs', scopes: ['observations:read'] },
      headers: { 'X-API-Key': tenant.adminKey },
    });
    const token = await fetch(`${server.url}/v1/oauth/token`, {
      method: 'POST',
      headers: {
        'content-type': 'application/x-www-form-urlencoded',
        authorization: `Basic ${Buffer.from(`${client.body.clientId}:${client.body.clientSecret}`).toString('base64')}`,
      },
      body: 'grant_type=client_credentials',
    });
    expect(token.status).to.equal(200);
    const { access_token: accessToken } = (await token.json()) as { access_token: string };
    expect((await readWith(headerOf('client token', accessToken))).status).to.equal(200);
  });

  it('platform key: X-API-Key with PLATFORM_ADMIN_KEY creates and reads tenants', async () => {
    const headers = headerOf('platform key', server.platformAdminKey);
    const created = await request(`${server.url}/v1/tenants`, {
      method: 'POST',
      body: { name: 'Docs', notificationEmail: 'ops@docs.test' },
      headers,
    });
    expect(created.status).to.equal(201);
    expect((await request(`${server.url}/v1/tenants/${created.body.id}`, { headers })).status).to.equal(200);
  });
});
