import { expect } from 'chai';
import { documentedOperations } from '../support/openapi.js';
import { describePostgres, suiteDatabase } from '../support/postgres.js';
import { startTestServer, withTenant, type TestServer } from '../support/server.js';

/**
 * U+0000 in a path or a query parameter: PostgreSQL's text cannot hold it, and it answered 500 on ten routes
 * there. On every backend a path holding one is a 404 and a query parameter a 400, as problem+json.
 */
const suite = (env: () => Record<string, string>) => {
  let server: TestServer;
  let tenantId: string;
  let adminKey: string;
  let doc: Record<string, any>;
  before(async () => {
    server = await startTestServer({ RATE_LIMIT: 'off', ...env() });
    ({ tenantId, adminKey } = await withTenant(server, 'nul'));
    doc = (await (await fetch(`${server.url}/v1/openapi.json`)).json()) as Record<string, any>;
  });
  after(async () => {
    await server?.close();
  });

  const send = (method: string, path: string) =>
    fetch(`${server.url}${path}`, {
      method,
      headers: { 'X-API-Key': adminKey, 'content-type': 'application/json' },
      ...(['POST', 'PUT', 'PATCH'].includes(method) ? { body: '{}' } : {}),
    });

  it('answers 404 for an id holding U+0000 on every route that takes one', async () => {
    const withIds = documentedOperations(doc).filter(({ path }) => /\{(?!tenantId)\w+\}/.test(path));
    expect(withIds.length).to.be.greaterThan(20);
    const wrong: string[] = [];
    for (const { method, path } of withIds) {
      const response = await send(
        method,
        path.replace('{tenantId}', tenantId).replace(/\{\w+\}/g, 'o_1%00x'),
      );
      if (
        response.status !== 404 ||
        !response.headers.get('content-type')?.startsWith('application/problem+json')
      )
        wrong.push(`${method} ${path}: ${response.status}`);
      await response.arrayBuffer();
    }
    expect(wrong).to.deep.equal([]);
  });

  it('answers 400 naming the query parameter that holds U+0000', async () => {
    for (const list of ['locations?namePrefix=a%00', 'observations?species=%00', 'events?type=%00']) {
      const response = await send('GET', `/v1/tenants/${tenantId}/${list}`);
      expect(response.status, list).to.equal(400);
      const problem = (await response.json()) as { errors: { path: string }[] };
      expect(problem.errors.map((error) => error.path)).to.deep.equal([list.split(/[?=]/)[1]]);
    }
  });
};

describe('U+0000 in paths and queries, on SQLite', () => suite(() => ({})));
describePostgres('U+0000 in paths and queries, on PostgreSQL', () => {
  const database = suiteDatabase();
  suite(() => ({ DATABASE_URL: database() }));
});
