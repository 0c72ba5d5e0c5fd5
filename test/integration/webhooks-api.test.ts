import { expect } from 'chai';
import { eventually } from '../support/wait.js';
import { hostNotAllowed } from '../../src/webhooks/ssrf.js';
import { request as anonymous, startTestServer, withTenant, type TestServer } from '../support/server.js';

const secret = 'a-secret-of-16-chars-or-more';

const expectProblem = (response: { status: number; headers: Headers; body: any }, status: number) => {
  expect(response.status, JSON.stringify(response.body)).to.equal(status);
  expect(response.headers.get('content-type')).to.match(/^application\/problem\+json/);
  expect(response.body).to.include({ status });
  expect(response.body.title).to.be.a('string');
};

/** A server, one tenant, and a key holding webhooks:manage. */
const fixture = (env: Record<string, string>) => {
  const state = {} as { server: TestServer; tenantId: string; apiKey: string };
  beforeEach(async () => {
    state.server = await startTestServer(env);
    const tenant = await withTenant(state.server);
    state.tenantId = tenant.tenantId;
    state.apiKey = await tenant.key(['webhooks:manage', 'observations:read', 'cv:read']);
  });
  afterEach(async () => state.server.close());
  const base = () => `${state.server.url}/v1/tenants/${state.tenantId}/webhooks`;
  const call = (path: string, init: Parameters<typeof anonymous>[1] = {}) =>
    anonymous(`${base()}${path}`, { ...init, headers: { 'X-API-Key': state.apiKey, ...init.headers } });
  const create = (body: Record<string, unknown>) => call('', { method: 'POST', body });
  return { state, call, create };
};

describe('the webhook subscription API', () => {
  describe('with http and private networks allowed', () => {
    // Nothing listens on the discard port; these tests never make an event a subscription receives.
    const url = 'http://127.0.0.1:9/hooks';
    const { state, call, create } = fixture({
      WEBHOOK_ALLOW_HTTP: 'true',
      WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true',
      WEBHOOK_MAX_SUBSCRIPTIONS: '2',
    });

    it('creates a subscription: 201 with a string id, Location, status, createdAt, and the secret only in its standard form', async () => {
      const response = await create({ url, events: ['observation.created', 'cv.job.failed'], secret });
      expect(response.status, JSON.stringify(response.body)).to.equal(201);
      expect(response.body.id).to.be.a('string').and.match(/^w_/);
      expect(response.headers.get('location')).to.equal(
        `/v1/tenants/${state.tenantId}/webhooks/${response.body.id}`,
      );
      expect(response.body).to.deep.include({
        tenantId: state.tenantId,
        url,
        events: ['observation.created', 'cv.job.failed'],
        status: 'active',
        disabledReason: null,
      });
      expect(Date.parse(response.body.createdAt)).to.be.closeTo(Date.now(), 10_000);
      // A plain secret keys with its UTF-8 bytes; the answer gives it as the standard's libraries take it.
      expect(response.body.secret).to.equal(`whsec_${Buffer.from(secret).toString('base64')}`);
      expect(response.body).not.to.have.any.keys('sealedSecret');
    });

    it('reads one subscription back without its secret, and answers 404 for an unknown id', async () => {
      const created = await create({ url, events: ['observation.updated'], secret });
      const read = await call(`/${created.body.id}`);
      expect(read.status).to.equal(200);
      const { secret: shownOnce, ...subscription } = created.body;
      expect(shownOnce).to.be.a('string');
      expect(read.body).to.deep.equal({ ...subscription, health: read.body.health });
      expect(read.body.health).to.include({ attempts: 0, successRate: null, failing: false });
      expect(JSON.stringify(read.body)).not.to.include(secret).and.not.include(shownOnce);
      expectProblem(await call('/w_00000000000000000000000000'), 404);
    });

    it('keeps the secret out of the event history in the clear', async () => {
      await create({ url, events: ['observation.created'], secret });
      const all = await state.server.stores.eventStore.readAll({ filter: { tenantId: state.tenantId } });
      expect(JSON.stringify(all.events)).not.to.include(secret);
    });

    it('lists the subscriptions in pages with nextCursor, secrets left out', async () => {
      const first = await create({ url, events: ['observation.created'], secret });
      const second = await create({ url, events: ['observation.updated'], secret });
      const ids = [first.body.id, second.body.id];
      // The list is a read model: it catches up with the writes shortly after they are answered.
      const page = await eventually(async () => {
        const response = await call('?limit=1');
        return response.body.nextCursor ? response : undefined;
      });
      expect(page.status).to.equal(200);
      expect(page.body.data.map((s: { id: string }) => s.id)).to.deep.equal([ids[0]]);
      expect(page.body.nextCursor).to.be.a('string');
      const next = await call(`?limit=1&cursor=${encodeURIComponent(page.body.nextCursor)}`);
      expect(next.body.data.map((s: { id: string }) => s.id)).to.deep.equal([ids[1]]);
      expect(next.body.nextCursor).to.equal(null);
      expect(JSON.stringify([page.body, next.body])).not.to.include(secret);
      for (const subscription of [...page.body.data, ...next.body.data]) {
        expect(subscription).to.include.keys('status', 'createdAt', 'disabledReason');
      }
    });

    it('deletes a subscription with 204, after which it is 404, and a second delete is 404', async () => {
      const created = await create({ url, events: ['observation.created'], secret });
      expect((await call(`/${created.body.id}`, { method: 'DELETE' })).status).to.equal(204);
      expectProblem(await call(`/${created.body.id}`), 404);
      expectProblem(await call(`/${created.body.id}`, { method: 'DELETE' }), 404);
    });

    it('answers enable on an active subscription with 200 and leaves it active, and 404 for an unknown id', async () => {
      const created = await create({ url, events: ['observation.created'], secret });
      const enabled = await call(`/${created.body.id}/enable`, {
        method: 'POST',
        body: { replayMissed: true },
      });
      expect(enabled.status).to.equal(200);
      expect(enabled.body).to.include({ id: created.body.id, status: 'active', replayed: 0 });
      expectProblem(await call('/w_00000000000000000000000000/enable', { method: 'POST', body: {} }), 404);
    });

    it('answers the deliveries of an unknown subscription with 404, and a bad status filter with 400', async () => {
      expectProblem(await call('/w_00000000000000000000000000/deliveries'), 404);
      const created = await create({ url, events: ['observation.created'], secret });
      const bad = await call(`/${created.body.id}/deliveries?status=pending`);
      expectProblem(bad, 400);
      expect(bad.body.errors[0].path).to.equal('status');
      const unknownType = await call(`/${created.body.id}/deliveries?eventType=observation.deleted`);
      expectProblem(unknownType, 400);
      expect(unknownType.body.errors[0].path).to.equal('eventType');
    });

    it('refuses an enable request whose replayMissed is not a boolean, or that has unknown fields', async () => {
      const created = await create({ url, events: ['observation.created'], secret });
      const wrong = await call(`/${created.body.id}/enable`, {
        method: 'POST',
        body: { replayMissed: 'yes' },
      });
      expectProblem(wrong, 400);
      expect(wrong.body.errors[0].path).to.equal('replayMissed');
      const unknown = await call(`/${created.body.id}/enable`, { method: 'POST', body: { replay: true } });
      expectProblem(unknown, 400);
      expect(unknown.body.errors[0].path).to.equal('replay');
    });

    it('answers redelivery of an unknown delivery with 404', async () => {
      const created = await create({ url, events: ['observation.created'], secret });
      expectProblem(
        await call(`/${created.body.id}/deliveries/d_00000000000000000000000000/redeliver`, {
          method: 'POST',
        }),
        404,
      );
    });

    it('refuses a subscription over the per-tenant cap with a 409 problem that says so', async () => {
      expect((await create({ url, events: ['observation.created'], secret })).status).to.equal(201);
      expect((await create({ url, events: ['observation.created'], secret })).status).to.equal(201);
      const third = await create({ url, events: ['observation.created'], secret });
      expectProblem(third, 409);
      expect(third.body.detail).to.match(/at most 2 webhook subscriptions/);
    });

    it('makes room under the cap when a subscription is deleted', async () => {
      const first = await create({ url, events: ['observation.created'], secret });
      await create({ url, events: ['observation.created'], secret });
      await call(`/${first.body.id}`, { method: 'DELETE' });
      expect((await create({ url, events: ['observation.created'], secret })).status).to.equal(201);
    });

    it('refuses an unknown event type with 400, naming its place in the list', async () => {
      const response = await create({ url, events: ['observation.created', 'observation.deleted'], secret });
      expectProblem(response, 400);
      expect(response.body.errors).to.have.length(1);
      expect(response.body.errors[0].path).to.equal('events.1');
      expect(response.body.errors[0].message).to.include('"observation.deleted" is not an event type');
      expect(response.body.errors[0].message).to.include('observation.created');
      const first = await create({ url, events: ['nope'], secret });
      expect(first.body.errors[0].path).to.equal('events.0');
    });

    it('refuses an empty event list, a short secret and a missing url with 400, naming each field', async () => {
      const empty = await create({ url, events: [], secret });
      expectProblem(empty, 400);
      expect(empty.body.errors.map((e: { path: string }) => e.path)).to.deep.equal(['events']);
      const short = await create({ url, events: ['observation.created'], secret: 'fifteen-chars!!' });
      expectProblem(short, 400);
      expect(short.body.errors.map((e: { path: string }) => e.path)).to.deep.equal(['secret']);
      const missing = await create({ events: ['observation.created'], secret });
      expectProblem(missing, 400);
      expect(missing.body.errors.map((e: { path: string }) => e.path)).to.deep.equal(['url']);
    });

    it('refuses a relative URL and a URL with credentials', async () => {
      for (const bad of ['/hooks', 'http://user:pass@127.0.0.1:9/hooks', 'ftp://127.0.0.1/hooks']) {
        const response = await create({ url: bad, events: ['observation.created'], secret });
        expectProblem(response, 400);
        expect(response.body.errors[0].path, bad).to.equal('url');
      }
    });

    it('refuses chosen secrets without entropy (16 spaces, 16 NULs, one character repeated, zero bytes) or with control characters, with 400 naming the field', async () => {
      const cases: [string, RegExp][] = [
        [' '.repeat(16), /at least 8 different characters \(this one has 1\)/],
        ['\u0000'.repeat(16), /control characters/],
        ['x'.repeat(40), /at least 8 different characters/],
        ['abcabcabcabcabcabc', /this one has 3/],
        ['a-secret-with\na-newline', /control characters/],
        [
          `whsec_${Buffer.alloc(32).toString('base64')}`,
          /at least 8 different byte values \(this one has 1\)/,
        ],
      ];
      for (const [chosen, message] of cases) {
        const response = await create({ url, events: ['observation.created'], secret: chosen });
        expectProblem(response, 400);
        expect(response.body.errors, JSON.stringify(chosen)).to.have.length(1);
        expect(response.body.errors[0].path).to.equal('secret');
        expect(response.body.errors[0].message).to.match(message);
      }
    });

    it('accepts a secret of exactly 16 characters', async () => {
      expect(
        (await create({ url, events: ['observation.created'], secret: 'sixteen-chars-ok' })).status,
      ).to.equal(201);
    });
  });

  describe('in development, with no setting: a loopback receiver over http is allowed, nothing else private', () => {
    const { create } = fixture({});

    it('accepts http://127.0.0.1 and http://localhost receivers', async () => {
      for (const url of ['http://127.0.0.1:9/hooks', 'http://localhost:9/hooks']) {
        const response = await create({ url, events: ['observation.created'] });
        expect(response.status, url).to.equal(201);
      }
    });

    it('refuses a private address with a message naming the settings', async () => {
      const response = await create({ url: 'https://10.0.0.1/x', events: ['observation.created'] });
      expectProblem(response, 400);
      expect(response.body.errors).to.deep.equal([{ path: 'url', message: hostNotAllowed }]);
      expect(hostNotAllowed).to.include('WEBHOOK_ALLOW_PRIVATE_NETWORKS');
    });
  });

  describe('as in production (WEBHOOK_ALLOW_LOOPBACK=false): https only, private networks refused', () => {
    const { state, create } = fixture({ WEBHOOK_ALLOW_LOOPBACK: 'false' });

    it('refuses an http URL with 400 naming url', async () => {
      const response = await create({
        url: 'http://127.0.0.1:9/hooks',
        events: ['observation.created'],
        secret,
      });
      expectProblem(response, 400);
      expect(response.body.errors).to.deep.equal([
        { path: 'url', message: 'must be an https URL (http only with WEBHOOK_ALLOW_HTTP=true)' },
      ]);
    });

    for (const target of [
      'https://10.0.0.1/x',
      'https://169.254.169.254/latest',
      'https://127.0.0.1/hooks',
      'https://192.168.1.10/hooks',
      'https://[::1]/',
      'https://[::ffff:127.0.0.1]/',
      'https://[::ffff:a9fe:a9fe]/',
      'https://[fd00::1]/',
      'https://[fe80::1]/',
      'https://0.0.0.0/',
      'https://224.0.0.1/',
    ]) {
      it(`refuses ${target}, an address a webhook may never reach, with 400 naming url`, async () => {
        const before = await state.server.stores.eventStore.headPosition();
        const response = await create({ url: target, events: ['observation.created'], secret });
        expectProblem(response, 400);
        expect(response.body.errors[0].path).to.equal('url');
        expect(response.body.errors[0].message).to.equal(hostNotAllowed);
        expect(await state.server.stores.eventStore.headPosition()).to.equal(before);
      });
    }
  });
});
