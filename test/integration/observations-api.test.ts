import { expect } from 'chai';
import { request as anonymous, startTestServer, withTenant, type TestServer } from '../support/server.js';

let tenant: string;
let apiKey: string;
let adminKey: string;

/** Requests with an API key that holds observations:read and observations:write. */
const request = (url: string, init: Parameters<typeof anonymous>[1] = {}) =>
  anonymous(url, { ...init, headers: { 'X-API-Key': apiKey, ...init.headers } });
const base = (server: TestServer, tenantId = tenant) => `${server.url}/v1/tenants/${tenantId}/observations`;

const fox = {
  observedAt: '2026-05-01T09:30:00+02:00',
  position: { lat: 45.1, lon: 7.2, accuracyM: 5 },
  notes: 'near the creek',
  attributes: { species: 'fox', count: 2 },
};

const expectProblem = (response: { status: number; headers: Headers; body: any }, status: number) => {
  expect(response.status).to.equal(status);
  expect(response.headers.get('content-type')).to.match(/^application\/problem\+json/);
  expect(response.body).to.include({ status });
  expect(response.body.type).to.be.a('string');
  expect(response.body.title).to.be.a('string');
  expect(response.body.requestId).to.equal(response.headers.get('x-request-id'));
};

describe('the observations API', () => {
  let server: TestServer;
  beforeEach(async () => {
    server = await startTestServer({ CONSISTENCY_TIMEOUT: '300ms' });
    const owner = await withTenant(server);
    tenant = owner.tenantId;
    apiKey = await owner.key(['observations:read', 'observations:write']);
    adminKey = owner.adminKey;
  });
  afterEach(async () => server.close());

  const create = async (body: object = fox, tenantId = tenant) => {
    const response = await request(base(server, tenantId), { method: 'POST', body });
    expect(response.status, JSON.stringify(response.body)).to.equal(201);
    return response;
  };

  describe('creating an observation', () => {
    it('answers 201 with Location, ETag, position and the observation built from its event', async () => {
      const response = await create();
      expect(response.body).to.deep.include({
        tenantId: tenant,
        observedAt: '2026-05-01T07:30:00.000Z',
        position: { lat: 45.1, lon: 7.2, accuracyM: 5 },
        locationId: null,
        visitId: null,
        notes: 'near the creek',
        attributes: { species: 'fox', count: 2 },
        version: 0,
      });
      expect(response.body.id).to.match(/^o_[0-9a-z]{26}$/);
      expect(response.headers.get('location')).to.equal(
        `/v1/tenants/${tenant}/observations/${response.body.id}`,
      );
      expect(response.headers.get('etag')).to.equal('"0"');
      expect(Number(response.headers.get('x-position'))).to.be.greaterThan(0);
      expect(response.headers.get('x-request-id')).to.be.a('string');

      const read = await request(`${server.url}${response.headers.get('location')}`);
      expect(read.status).to.equal(200);
      expect(read.body).to.deep.equal(response.body);
      expect(read.headers.get('etag')).to.equal('"0"');
    });

    it('answers 304 to a read whose If-None-Match is current', async () => {
      const { headers } = await create();
      const read = await fetch(`${server.url}${headers.get('location')}`, {
        headers: { 'If-None-Match': '"0"', 'X-API-Key': apiKey },
      });
      expect(read.status).to.equal(304);
    });
  });

  describe('bad input, which writes nothing', () => {
    let headBefore: number;
    beforeEach(async () => {
      headBefore = await server.stores.eventStore.headPosition();
    });
    afterEach(async () => {
      expect(await server.stores.eventStore.headPosition()).to.equal(headBefore);
    });

    it('answers malformed JSON with 400', async () => {
      expectProblem(
        await request(base(server), {
          method: 'POST',
          rawBody: '{"observedAt": ',
          headers: { 'content-type': 'application/json' },
        }),
        400,
      );
    });

    it('answers a wrong content type with 415', async () => {
      expectProblem(
        await request(base(server), {
          method: 'POST',
          rawBody: JSON.stringify(fox),
          headers: { 'content-type': 'text/plain' },
        }),
        415,
      );
    });

    it('answers latitude 999 with 400 naming position.lat', async () => {
      const response = await request(base(server), {
        method: 'POST',
        body: { ...fox, position: { lat: 999, lon: 7 } },
      });
      expectProblem(response, 400);
      expect(response.body.errors).to.deep.equal([
        { path: 'position.lat', message: 'must be a latitude between -90 and 90' },
      ]);
    });

    it('refuses unknown fields, naming them', async () => {
      const response = await request(base(server), { method: 'POST', body: { ...fox, specie: 'fox' } });
      expectProblem(response, 400);
      expect(response.body.errors).to.deep.equal([{ path: 'specie', message: 'is not a known field' }]);
    });

    it('answers a body over the limit with 413', async () => {
      const big = { ...fox, notes: 'x'.repeat(2 * 1024 * 1024) };
      expectProblem(await request(base(server), { method: 'POST', body: big }), 413);
    });

    it('answers an unknown id with 404, for reads and patches', async () => {
      expectProblem(await request(`${base(server)}/o_00000000000000000000000000`), 404);
      expectProblem(
        await request(`${base(server)}/o_00000000000000000000000000`, {
          method: 'PATCH',
          body: { notes: 'x' },
        }),
        404,
      );
    });

    it('answers a tampered or garbage cursor with 400', async () => {
      expectProblem(await request(`${base(server)}?cursor=garbage`), 400);
      expectProblem(await request(`${base(server)}?cursor=eyJ2IjoxfQ.AAAAAAAAAAAAAAAAAAAAAA`), 400);
    });

    it('answers limit=500 with 400 naming limit', async () => {
      const response = await request(`${base(server)}?limit=500`);
      expectProblem(response, 400);
      expect(response.body.errors[0].path).to.equal('limit');
    });
  });

  describe('patching an observation', () => {
    it('merges the patch and moves the version', async () => {
      const { body: created } = await create();
      const response = await request(`${base(server)}/${created.id}`, {
        method: 'PATCH',
        body: { notes: null, attributes: { count: 3, species: null } },
        headers: { 'content-type': 'application/merge-patch+json' },
      });
      expect(response.status).to.equal(200);
      expect(response.body).to.deep.include({ notes: null, attributes: { count: 3 }, version: 1 });
      expect(response.body.position).to.deep.equal(fox.position);
      expect(response.headers.get('etag')).to.equal('"1"');
      expect(response.body.updatedAt >= created.updatedAt).to.equal(true);
    });

    it('answers a stale If-Match with 412 and a current one with 200', async () => {
      const { body: created } = await create();
      const url = `${base(server)}/${created.id}`;
      await request(url, { method: 'PATCH', body: { notes: 'first' } });
      expectProblem(
        await request(url, { method: 'PATCH', body: { notes: 'second' }, headers: { 'If-Match': '"0"' } }),
        412,
      );
      const current = await request(url, {
        method: 'PATCH',
        body: { notes: 'second' },
        headers: { 'If-Match': '"1"' },
      });
      expect(current.status).to.equal(200);
      expect(current.headers.get('etag')).to.equal('"2"');
    });

    it('writes nothing for a patch that changes nothing', async () => {
      const { body: created } = await create();
      const response = await request(`${base(server)}/${created.id}`, {
        method: 'PATCH',
        body: { notes: fox.notes },
      });
      expect(response.status).to.equal(200);
      expect(response.body.version).to.equal(0);
      expect(response.headers.get('x-position')).to.equal(null);
    });

    it('refuses fields the server owns', async () => {
      const { body: created } = await create();
      const response = await request(`${base(server)}/${created.id}`, {
        method: 'PATCH',
        body: { version: 7, id: 'o_x' },
      });
      expectProblem(response, 400);
      expect(response.body.errors.map((e: { path: string }) => e.path).sort()).to.deep.equal([
        'id',
        'version',
      ]);
    });
  });

  describe('listing observations', () => {
    /** Two locations, `a` and `b`, that the seeded observations name. */
    const places: Record<'a' | 'b', string> = { a: '', b: '' };
    const seed = async () => {
      for (const name of ['a', 'b'] as const) {
        const location = await anonymous(`${server.url}/v1/tenants/${tenant}/locations`, {
          method: 'POST',
          body: { name, position: { lat: 45, lon: 7 } },
          headers: { 'X-API-Key': adminKey },
        });
        places[name] = location.body.id as string;
      }
      const made = [];
      for (const [day, lat, lon, place] of [
        [1, 45, 7, 'a'],
        [2, 46, 8, 'b'],
        [3, 10, 100, 'a'],
        [4, 45.5, 7.5, null],
      ] as const) {
        const locationId = place && places[place];
        made.push(
          (
            await create({
              observedAt: `2026-05-0${day}T12:00:00Z`,
              position: { lat, lon },
              ...(locationId ? { locationId } : {}),
            })
          ).body,
        );
      }
      return made;
    };
    const list = async (query: string) => {
      const last = await server.stores.eventStore.headPosition();
      const response = await request(`${base(server)}?minPosition=${last}&${query}`);
      expect(response.status, JSON.stringify(response.body)).to.equal(200);
      return response.body as { data: { id: string; observedAt: string }[]; nextCursor: string | null };
    };

    it('sees a write at once when asked to wait for its position', async () => {
      const created = await create();
      const response = await request(`${base(server)}?minPosition=${created.headers.get('x-position')}`);
      expect(response.body.data.map((o: { id: string }) => o.id)).to.deep.equal([created.body.id]);
    });

    it('answers 503 with Retry-After when the read model cannot catch up within the bound', async () => {
      const response = await request(`${base(server)}?minPosition=999999`);
      expectProblem(response, 503);
      expect(response.headers.get('retry-after')).to.equal('1');
    });

    it('sorts by observedAt, newest first by default, and ascending on request', async () => {
      const made = await seed();
      expect((await list('')).data.map((o) => o.id)).to.deep.equal(made.map((o) => o.id).reverse());
      expect((await list('sort=observedAt')).data.map((o) => o.id)).to.deep.equal(made.map((o) => o.id));
    });

    it('filters by time range, location, bounding box and update time', async () => {
      const [first, second, third, fourth] = await seed();
      const ids = async (query: string) => (await list(query)).data.map((o) => o.id);
      expect(await ids('observedFrom=2026-05-02T00:00:00Z&observedTo=2026-05-03T23:59:59Z')).to.deep.equal([
        third.id,
        second.id,
      ]);
      expect(await ids(`locationId=${places.a}`)).to.deep.equal([third.id, first.id]);
      expect(await ids('bbox=6,44,9,47')).to.deep.equal([fourth.id, second.id, first.id]);
      expect(await ids(`updatedSince=${encodeURIComponent(fourth.updatedAt)}`)).to.include(fourth.id);
      expect(await ids('updatedSince=2100-01-01T00:00:00Z')).to.deep.equal([]);
    });

    it('pages with nextCursor through every observation exactly once', async () => {
      const made = await seed();
      const seen: string[] = [];
      let page = await list('limit=3');
      seen.push(...page.data.map((o) => o.id));
      expect(page.nextCursor).to.be.a('string');
      page = await list(`limit=3&cursor=${page.nextCursor}`);
      seen.push(...page.data.map((o) => o.id));
      expect(page.nextCursor).to.equal(null);
      expect(seen).to.deep.equal(made.map((o) => o.id).reverse());
    });

    it('refuses a cursor used with other filters', async () => {
      await seed();
      const page = await list('limit=1');
      expectProblem(
        await request(`${base(server)}?limit=1&locationId=${places.a}&cursor=${page.nextCursor}`),
        400,
      );
    });
  });

  describe('tenants', () => {
    it('never shows one tenant’s observations to another', async () => {
      const { body: created } = await create();
      const other = await withTenant(server, 'other');
      const otherKey = await other.key(['observations:read']);
      const asOther = (url: string) => anonymous(url, { headers: { 'X-API-Key': otherKey } });
      expectProblem(await asOther(`${base(server, other.tenantId)}/${created.id}`), 404);
      const last = await server.stores.eventStore.headPosition();
      const list = await asOther(`${base(server, other.tenantId)}?minPosition=${last}`);
      expect(list.body.data).to.deep.equal([]);
    });

    it('answers 404 to a credential used on another tenant’s path, as for a tenant that does not exist', async () => {
      const { body: created } = await create();
      const other = await withTenant(server, 'other');
      const otherKey = await other.key(['observations:read']);
      const response = await anonymous(`${base(server)}/${created.id}`, {
        headers: { 'X-API-Key': otherKey },
      });
      expectProblem(response, 404);
      expect(response.body.detail).to.equal('No such tenant');
    });

    it('answers a malformed tenant id with 404', async () => {
      expectProblem(await request(base(server, 'ACME!')), 404);
    });
  });

  describe('everything else', () => {
    it('reports health once the stores answer, without credentials', async () => {
      const response = await anonymous(`${server.url}/health`);
      expect(response.status).to.equal(200);
      expect(response.body).to.deep.include({ status: 'ready' });
    });

    it('answers unknown routes with 404 and wrong methods with 405 and Allow', async () => {
      expectProblem(await request(`${server.url}/v1/nothing-here`), 404);
      const response = await request(base(server), { method: 'DELETE' });
      expectProblem(response, 405);
      expect(response.headers.get('allow')).to.include('POST');
    });

    it('reports 503 from health when a store stops answering', async () => {
      await server.stores.readModels.close();
      // Anonymous: only that it is not ready; which store failed, and how, is for the operator.
      const anonymous = await request(`${server.url}/health`);
      expect(anonymous.status).to.equal(503);
      expect(Object.keys(anonymous.body as object).sort()).to.deep.equal(['status', 'title', 'type']);
      const response = await request(`${server.url}/health`, {
        headers: { 'X-API-Key': server.platformAdminKey },
      });
      expect(response.status).to.equal(503);
      expect(response.body).to.deep.include({ status: 'not-ready', type: '/problems/not-ready' });
      expect(response.body.checks.readModels.status).to.equal('fail');
      expect(response.headers.get('retry-after')).to.equal('5');
    });

    it('answers an unexpected failure with a bare 500', async () => {
      await server.stores.readModels.close();
      const response = await request(base(server));
      expectProblem(response, 500);
      expect(JSON.stringify(response.body)).not.to.match(/database|sqlite|at /i);
    });
  });
});
