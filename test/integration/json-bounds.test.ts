import { expect } from 'chai';
import { documentedOperations } from '../support/openapi.js';
import { sendRaw } from '../support/raw-request.js';
import { request, startTestServer, withTenant, type TestServer } from '../support/server.js';

/**
 * The write side refuses what the read side cannot hold: free-form fields are bounded (32 levels, 256 keys
 * in an object), and JSON of any depth, on any route, gets 400 or 413, never a 500.
 */

type Obj = Record<string, any>;

/** An object `{"a": {"a": … {}}}` nested `depth` levels deep, the outer object included. */
const nested = (depth: number): Obj => {
  let value: Obj = {};
  for (let level = 1; level < depth; level++) value = { a: value };
  return value;
};

/** JSON text nested `depth` levels deep, built as text: no recursion on the sending side either. */
const deepArrayText = (depth: number) => `${'['.repeat(depth)}${']'.repeat(depth)}`;
const deepObjectText = (depth: number, field = 'attributes') =>
  `{"observedAt":"2026-05-01T09:30:00Z","${field}":${'{"a":'.repeat(depth)}1${'}'.repeat(depth)}}`;

const withKeys = (count: number) => Object.fromEntries(Array.from({ length: count }, (_, i) => [`k${i}`, i]));

describe('bounds on JSON', function () {
  this.timeout(60_000);
  let server: TestServer;
  let tenantId: string;
  let adminKey: string;
  let observationId: string;
  let locationId: string;
  let visitId: string;
  let webhookId: string;
  const api = (path: string, init: Parameters<typeof request>[1] = {}) =>
    request(`${server.url}/v1/tenants/${tenantId}${path}`, {
      ...init,
      headers: { 'X-API-Key': adminKey, ...init.headers },
    });

  before(async () => {
    server = await startTestServer({
      RATE_LIMIT: 'off',
      WEBHOOK_ALLOW_HTTP: 'true',
      WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true',
    });
    ({ tenantId, adminKey } = await withTenant(server, 'bounds'));
    const created = async (path: string, body: Obj) => {
      const response = await api(path, { method: 'POST', body });
      expect(response.status, JSON.stringify(response.body).slice(0, 300)).to.equal(201);
      return response.body.id as string;
    };
    observationId = await created('/observations', { observedAt: '2026-05-01T09:30:00Z' });
    locationId = await created('/locations', { name: 'Field', position: { lat: 1, lon: 2 } });
    visitId = await created('/visits', { locationId, startedAt: '2026-05-01T08:00:00Z' });
    webhookId = await created('/webhooks', {
      url: 'http://127.0.0.1:9/hooks',
      events: ['observation.created'],
      secret: 'whsec-bounds-0123456789abcdef',
    });
  });
  after(async () => server?.close());

  const expectRefused = (response: { status: number; body: any }, path: string) => {
    expect(response.status, JSON.stringify(response.body).slice(0, 300)).to.equal(400);
    expect(response.body.type).to.equal('/problems/validation-error');
    expect(response.body.errors.map((e: { path: string }) => e.path)).to.deep.equal([path]);
  };

  describe('observation attributes', () => {
    it('refuses attributes nested 1,000 levels deep on POST, naming attributes', async () => {
      const response = await api('/observations', {
        method: 'POST',
        body: { observedAt: '2026-05-01T09:30:00Z', attributes: nested(1000) },
      });
      expectRefused(response, 'attributes');
      expect(response.body.errors[0].message).to.equal('is nested more than 64 levels deep');
    });

    it('refuses attributes nested 1,000 levels deep on PATCH, naming attributes', async () => {
      for (const contentType of ['application/merge-patch+json', 'application/json']) {
        const response = await api(`/observations/${observationId}`, {
          method: 'PATCH',
          headers: { 'content-type': contentType },
          body: { attributes: nested(1000) },
        });
        expectRefused(response, 'attributes');
      }
    });

    it('accepts 32 levels and refuses 33', async () => {
      const accepted = await api('/observations', {
        method: 'POST',
        body: { observedAt: '2026-05-01T09:30:00Z', attributes: nested(32) },
      });
      expect(accepted.status, JSON.stringify(accepted.body).slice(0, 300)).to.equal(201);
      expect(accepted.body.attributes).to.deep.equal(nested(32));
      const refused = await api('/observations', {
        method: 'POST',
        body: { observedAt: '2026-05-01T09:30:00Z', attributes: nested(33) },
      });
      expectRefused(refused, 'attributes');
      const patched = await api(`/observations/${observationId}`, {
        method: 'PATCH',
        body: { attributes: nested(33) },
      });
      expectRefused(patched, 'attributes');
    });

    it('refuses more than 256 keys in an object', async () => {
      const refused = await api('/observations', {
        method: 'POST',
        body: { observedAt: '2026-05-01T09:30:00Z', attributes: { inner: withKeys(257) } },
      });
      expectRefused(refused, 'attributes');
      expect(refused.body.errors[0].message).to.equal('must have at most 256 keys in any object (at inner)');
      const accepted = await api('/observations', {
        method: 'POST',
        body: { observedAt: '2026-05-01T09:30:00Z', attributes: withKeys(256) },
      });
      expect(accepted.status, JSON.stringify(accepted.body).slice(0, 300)).to.equal(201);
    });

    it('refuses a patch whose merge would hold more than 256 keys, though each part has fewer', async () => {
      const first = await api(`/observations/${observationId}`, {
        method: 'PATCH',
        body: { attributes: withKeys(200) },
      });
      expect(first.status, JSON.stringify(first.body).slice(0, 300)).to.equal(200);
      const more = Object.fromEntries(Array.from({ length: 100 }, (_, i) => [`more${i}`, i]));
      const second = await api(`/observations/${observationId}`, {
        method: 'PATCH',
        body: { attributes: more },
      });
      expectRefused(second, 'attributes');
    });

    it('refuses keys holding U+0000, which a MongoDB read model cannot store', async () => {
      const response = await api('/observations', {
        method: 'POST',
        body: { observedAt: '2026-05-01T09:30:00Z', attributes: { 'a\u0000b': 1 } },
      });
      expectRefused(response, 'attributes');
    });

    it('lists the new observations afterwards: nothing refused reached the projection', async () => {
      const created = await api('/observations', {
        method: 'POST',
        body: { observedAt: '2026-05-01T09:30:00Z', attributes: { after: true } },
      });
      const position = created.headers.get('x-position');
      const list = await api(`/observations?minPosition=${position}&limit=200`);
      expect(list.status, JSON.stringify(list.body).slice(0, 300)).to.equal(200);
      expect(list.body.data.map((o: Obj) => o.id)).to.include(created.body.id);
    });
  });

  describe('location attributes', () => {
    it('are bounded the same way', async () => {
      const created = await api('/locations', {
        method: 'POST',
        body: { name: 'Deep', position: { lat: 1, lon: 2 }, attributes: nested(1000) },
      });
      expectRefused(created, 'attributes');
      const patched = await api(`/locations/${locationId}`, {
        method: 'PATCH',
        body: { attributes: nested(33) },
      });
      expectRefused(patched, 'attributes');
    });
  });

  describe('JSON nested 100,000 levels deep', () => {
    const depth = 100_000;

    it('is refused with 400 naming the field, or the body, before anything walks it', async () => {
      const post = (rawBody: string) =>
        request(`${server.url}/v1/tenants/${tenantId}/observations`, {
          method: 'POST',
          headers: { 'X-API-Key': adminKey, 'content-type': 'application/json' },
          rawBody,
        });
      const inField = await post(deepObjectText(depth));
      expectRefused(inField, 'attributes');
      expect(inField.body.errors[0].message).to.equal('is nested more than 64 levels deep');
      expectRefused(await post(deepObjectText(depth, 'notes')), 'notes');
      expectRefused(await post(deepArrayText(depth)), '');
    });

    it('in a query string gets 400: query strings are flat, nothing nests', async () => {
      const deep = encodeURIComponent(deepArrayText(2000));
      for (const query of [`bbox=${deep}`, `${deep}=1`, `locationId[a][b][c]=1`, `sort=${deep}`]) {
        const response = await api(`/observations?${query}`);
        expect(
          response.status,
          `${query.slice(0, 40)}: ${JSON.stringify(response.body).slice(0, 300)}`,
        ).to.equal(400);
        expect(response.body.type).to.equal('/problems/validation-error');
      }
    });

    it('gets 400 or 413 on every route that takes JSON, never 500, with or without an Idempotency-Key', async () => {
      const doc = (await (await fetch(`${server.url}/v1/openapi.json`)).json()) as Obj;
      const fixtures: Record<string, string> = {
        tenantId,
        id: '',
        deliveryId: 'd_none',
        mediaId: 'm_none',
      };
      const idFor = (path: string) => {
        if (path.includes('/observations/{id}')) return observationId;
        if (path.includes('/locations/{id}')) return locationId;
        if (path.includes('/visits/{id}')) return visitId;
        if (path.includes('/webhooks/{id}')) return webhookId;
        return 'x_none';
      };
      const withBody = documentedOperations(doc).filter(({ operation }) => operation.requestBody);
      expect(withBody.length).to.be.greaterThan(10);
      let jsonRoutes = 0;
      const seen: string[] = [];
      for (const { method, path, operation } of withBody) {
        const content = Object.keys((operation.requestBody as Obj).content as Obj);
        const filled = path.replace(/\{(\w+)\}/g, (_, name: string) =>
          name === 'id' ? idFor(path) : (fixtures[name] ?? 'x_none'),
        );
        const platform = operation['x-platform-key'] === 'required';
        const credential = { 'X-API-Key': platform ? server.platformAdminKey : adminKey };
        const jsonTypes = content.filter((type) => type.includes('json'));
        if (jsonTypes.length > 0) jsonRoutes += 1;
        const bodies: [string, string][] = [
          ...jsonTypes.flatMap((type): [string, string][] => [
            [type, deepArrayText(depth)],
            [type, deepObjectText(depth)],
            [type, deepObjectText(depth, 'name')],
          ]),
          // Forms and images are not JSON, and their routes take a few KiB: deep JSON sent as them, within
          // that, is refused as what it is not.
          ...content
            .filter((type) => !type.includes('json'))
            .map((type): [string, string] => [type, deepArrayText(1000)]),
        ];
        for (const [contentType, body] of bodies) {
          for (const idempotencyKey of [undefined, `deep-${jsonRoutes}-${contentType}-${body.length}`]) {
            const response = await sendRaw(
              `${server.url}${filled}`,
              method,
              {
                ...credential,
                'content-type': contentType,
                ...(idempotencyKey ? { 'Idempotency-Key': idempotencyKey } : {}),
              },
              body,
            );
            const what = `${method} ${path} as ${contentType}${idempotencyKey ? ' with a key' : ''}: ${
              response.status
            } ${response.text.slice(0, 300)}`;
            seen.push(`${method} ${path} ${contentType} ${response.status}`);
            if (contentType.includes('json')) expect([400, 413], what).to.include(response.status);
            else expect(response.status, what).to.be.within(400, 499);
          }
        }
      }
      expect(jsonRoutes).to.be.greaterThan(10);
      if (process.env.BOUNDS_VERBOSE) console.log(seen.join('\n'));
    });
  });
});
