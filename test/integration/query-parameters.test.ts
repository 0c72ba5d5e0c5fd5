import { expect } from 'chai';
import { request, startTestServer, withTenant, type TestServer } from '../support/server.js';

/**
 * Unknown query parameters are refused as unknown body fields are (docs/api.md): on a read by id, a delete,
 * a creation and a public route alike, with 400 naming each, after the credential is checked.
 */
describe('query parameters a route does not take', () => {
  let server: TestServer;
  let tenant: Awaited<ReturnType<typeof withTenant>>;
  let observation: string;
  const url = (path: string) => `${server.url}/v1/tenants/${tenant.tenantId}${path}`;
  const asAdmin = (init: Parameters<typeof request>[1] = {}) => ({
    ...init,
    headers: { 'X-API-Key': tenant.adminKey, ...init.headers },
  });
  const unknownNamed = (response: Awaited<ReturnType<typeof request>>, ...names: string[]) => {
    expect(response.status, JSON.stringify(response.body)).to.equal(400);
    expect(response.body.errors).to.deep.equal(
      names.map((path) => ({ path, message: 'is not a known field' })),
    );
  };

  before(async () => {
    server = await startTestServer();
    tenant = await withTenant(server);
    const created = await request(
      url('/observations'),
      asAdmin({ method: 'POST', body: { observedAt: '2026-05-01T09:30:00Z' } }),
    );
    observation = created.body.id;
  });
  after(() => server.close());

  it('refuses them on a read by id, naming each', async () => {
    unknownNamed(
      await request(url(`/observations/${observation}?foo=1&fields=id`), asAdmin()),
      'foo',
      'fields',
    );
    expect((await request(url(`/observations/${observation}`), asAdmin())).status).to.equal(200);
  });

  it('refuses them on a list beside the ones it takes, and on a delete and a creation', async () => {
    unknownNamed(await request(url('/observations?limit=5&specie=fox'), asAdmin()), 'specie');
    unknownNamed(
      await request(url(`/locations/l_nothing?force=true`), asAdmin({ method: 'DELETE' })),
      'force',
    );
    unknownNamed(
      await request(
        url('/observations?dryRun=1'),
        asAdmin({ method: 'POST', body: { observedAt: '2026-05-01T09:30:00Z' } }),
      ),
      'dryRun',
    );
    expect((await request(url('/observations?limit=5'), asAdmin())).status).to.equal(200);
  });

  it('checks the credential first, and refuses them on public routes too', async () => {
    expect((await request(url(`/observations/${observation}?foo=1`))).status).to.equal(401);
    unknownNamed(await request(`${server.url}/health/live?verbose=1`), 'verbose');
  });
});
