import { expect } from 'chai';
import { randomUUID } from 'node:crypto';
import type { NewEvent, RecordedEvent } from '../../src/core/events.js';
import type { EventStore, ReadAllOptions } from '../../src/eventstore/port.js';
import { request, startTestServer, withTenant, type TestServer } from '../support/server.js';
import { describePostgres, suiteDatabase } from '../support/postgres.js';
import { eventually, sleep } from '../support/wait.js';

type Response = Awaited<ReturnType<typeof request>>;

const expectProblem = (response: Response, status: number, path?: string) => {
  expect(response.status, JSON.stringify(response.body)).to.equal(status);
  expect(response.headers.get('content-type')).to.match(/^application\/problem\+json/);
  if (path) expect(response.body.errors.map((e: { path: string }) => e.path)).to.include(path);
};

/** An event written straight to the store, with the time and stream the test wants. */
const probe = (
  tenantId: string,
  type: string,
  data: Record<string, unknown>,
  occurredAt = new Date().toISOString(),
): NewEvent => ({
  id: randomUUID(),
  type,
  data,
  metadata: { tenantId, actor: 'test', correlationId: 'c', causationId: null, occurredAt, schemaVersion: 1 },
});

/** Counts the store reads of one tenant's history, without changing what they answer. */
const countReads = (store: EventStore, tenantId: string, delayMs = 0) => {
  const original = store.readAll.bind(store);
  const counter = { calls: 0, restore: () => void (store.readAll = original) };
  store.readAll = async (options?: ReadAllOptions) => {
    if (options?.filter?.tenantId === tenantId) {
      counter.calls += 1;
      if (delayMs > 0) await sleep(delayMs);
    }
    return original(options);
  };
  return counter;
};

/** Appends `count` events of about `size` bytes each to `streams` streams of the tenant, 1,000 per append. */
/** Appends `count` probes; the position of the last. */
const appendMany = async (store: EventStore, tenantId: string, count: number, size = 0) => {
  const pad = 'x'.repeat(size);
  let last = 0;
  for (let i = 0; i < count; i += 1000) {
    const batch = Array.from({ length: Math.min(1000, count - i) }, (_, j) =>
      probe(tenantId, 'Probed', { i: i + j, ...(size ? { pad } : {}) }),
    );
    ({ lastPosition: last } = await store.appendToStream(
      `probe-${tenantId}_b${i / 1000}`,
      batch,
      'no_stream',
    ));
  }
  return last;
};

const ndjson = (text: string) =>
  text
    .split('\n')
    .filter((line) => line.length > 0)
    .map((line) => JSON.parse(line) as RecordedEvent);

describe('the history API', () => {
  let server: TestServer;
  let tenantId: string;
  let admin: Record<string, string>;
  const events = (query = '', headers: Record<string, string> = {}) =>
    request(`${server.url}/v1/tenants/${tenantId}/events${query}`, { headers: { ...admin, ...headers } });
  const observe = async (body: object) => {
    const response = await request(`${server.url}/v1/tenants/${tenantId}/observations`, {
      method: 'POST',
      body,
      headers: admin,
    });
    expect(response.status, JSON.stringify(response.body)).to.equal(201);
    return response.body as { id: string };
  };
  const patch = async (id: string, body: object) => {
    const response = await request(`${server.url}/v1/tenants/${tenantId}/observations/${id}`, {
      method: 'PATCH',
      body,
      headers: admin,
    });
    expect(response.status, JSON.stringify(response.body)).to.equal(200);
  };
  /** Every page of a query, following nextCursor. */
  const allPages = async (query: string) => {
    const pages: RecordedEvent[][] = [];
    let response = await events(`?${query}`);
    for (;;) {
      expect(response.status, JSON.stringify(response.body)).to.equal(200);
      pages.push(response.body.data as RecordedEvent[]);
      if (response.body.nextCursor === null) return pages;
      response = await events(`?${query}&cursor=${response.body.nextCursor as string}`);
    }
  };

  beforeEach(async () => {
    server = await startTestServer();
    const tenant = await withTenant(server);
    tenantId = tenant.tenantId;
    admin = { 'X-API-Key': tenant.adminKey };
  });
  afterEach(async () => server.close());

  describe('GET /v1/tenants/{tenantId}/events', () => {
    it("answers the tenant's events in commit order, each with its envelope, and no other tenant's", async () => {
      const other = await withTenant(server, 'other');
      await request(`${server.url}/v1/tenants/${other.tenantId}/observations`, {
        method: 'POST',
        body: { observedAt: '2026-05-01T09:30:00Z' },
        headers: { 'X-API-Key': other.adminKey },
      });
      const fox = await observe({ observedAt: '2026-05-01T09:30:00Z', notes: 'fox' });
      await patch(fox.id, { notes: 'red fox' });

      const response = await events();
      expect(response.status).to.equal(200);
      expect(response.headers.get('vary')).to.match(/accept/i);
      const data = response.body.data as RecordedEvent[];
      expect(response.body.nextCursor).to.equal(null);
      expect(data.map((event) => event.metadata.tenantId)).to.deep.equal(data.map(() => tenantId));
      const positions = data.map((event) => event.position);
      expect(positions).to.deep.equal([...positions].sort((a, b) => a - b));
      expect(data[0]).to.have.all.keys(
        'id',
        'type',
        'streamName',
        'streamVersion',
        'position',
        'data',
        'metadata',
        'hash',
        'previousHash',
      );
      expect(data.map((event) => event.type)).to.include.members([
        'TenantCreated',
        'ApiKeyCreated',
        'ObservationRecorded',
        'ObservationUpdated',
      ]);
      const updated = data.find((event) => event.type === 'ObservationUpdated')!;
      expect(updated).to.deep.include({
        streamName: `observation-${tenantId}_${fox.id}`,
        streamVersion: 1,
        data: { observationId: fox.id, changes: { notes: 'red fox' } },
      });
      expect(updated.metadata).to.include({ tenantId, schemaVersion: 1 });
      expect(updated.metadata.actor).to.match(/^apikey:/);
    });

    it('never shows credential hashes or sealed secrets', async () => {
      await request(`${server.url}/v1/tenants/${tenantId}/users`, {
        method: 'POST',
        body: { email: 'ann@example.test', password: 'a long enough password', scopes: ['cv:read'] },
        headers: admin,
      });
      const response = await events('?type=UserCreated,ApiKeyCreated');
      const data = response.body.data as RecordedEvent<string, Record<string, unknown>>[];
      expect(data.map((event) => event.type).sort()).to.deep.equal(['ApiKeyCreated', 'UserCreated']);
      // Shown as the salted commitments their hashes cover, never as the values, nor with their salts.
      const created = data.find((event) => event.type === 'UserCreated')!;
      const key = data.find((event) => event.type === 'ApiKeyCreated')!;
      expect(created.data.passwordHash).to.have.all.keys('commitment');
      expect((created.data.passwordHash as { commitment: string }).commitment).to.match(/^[0-9a-f]{64}$/);
      expect(key.data.secretHash).to.have.all.keys('commitment');
      expect(JSON.stringify(data)).not.to.match(/scrypt|salts/);
      const stored = await server.stores.eventStore.readStream(key.streamName, { raw: true });
      const secretHash = (stored[0]!.data as { secretHash: string }).secretHash;
      expect(JSON.stringify(data)).not.to.include(secretHash);
    });

    it('filters by type, repeated or comma-separated, and by exact stream', async () => {
      const fox = await observe({ observedAt: '2026-05-01T09:30:00Z', notes: 'fox' });
      const badger = await observe({ observedAt: '2026-05-01T09:31:00Z', notes: 'badger' });
      await patch(fox.id, { notes: 'red fox' });
      await patch(badger.id, { notes: 'old badger' });

      const repeated = await events('?type=ObservationUpdated&type=ObservationRecorded');
      const commas = await events('?type=ObservationRecorded,ObservationUpdated');
      expect(repeated.body).to.deep.equal(commas.body);
      expect((repeated.body.data as RecordedEvent[]).map((event) => event.type)).to.deep.equal([
        'ObservationRecorded',
        'ObservationRecorded',
        'ObservationUpdated',
        'ObservationUpdated',
      ]);

      const stream = `observation-${tenantId}_${fox.id}`;
      const one = (await events(`?stream=${stream}`)).body.data as RecordedEvent[];
      expect(one.map((event) => [event.streamName, event.streamVersion, event.type])).to.deep.equal([
        [stream, 0, 'ObservationRecorded'],
        [stream, 1, 'ObservationUpdated'],
      ]);
      // Exact: a stream whose name merely starts the same is not included.
      expect((await events(`?stream=${stream.slice(0, -1)}`)).body.data).to.deep.equal([]);
      expect((await events(`?stream=${stream}&type=ObservationUpdated`)).body.data).to.have.length(1);
    });

    it('filters by occurredAt from and to (inclusive), keeping commit order rather than time order', async () => {
      const store = server.stores.eventStore;
      const stream = `clock-${tenantId}_c1`;
      // Written in this order, with clocks that do not agree with it.
      await store.appendToStream(
        stream,
        [
          probe(tenantId, 'Ticked', { n: 1 }, '2026-01-03T00:00:00.000Z'),
          probe(tenantId, 'Ticked', { n: 2 }, '2026-01-01T00:00:00.000Z'),
          probe(tenantId, 'Ticked', { n: 3 }, '2026-01-02T12:00:00.000Z'),
          probe(tenantId, 'Ticked', { n: 4 }, '2026-01-05T00:00:00.000Z'),
        ],
        'no_stream',
      );
      const ns = async (query: string) =>
        ((await events(`?type=Ticked${query}`)).body.data as RecordedEvent<string, { n: number }>[]).map(
          (event) => event.data.n,
        );
      expect(await ns('&from=2026-01-02T00:00:00Z')).to.deep.equal([1, 3, 4]);
      expect(await ns('&to=2026-01-03T00:00:00Z')).to.deep.equal([1, 2, 3]);
      expect(await ns('&from=2026-01-02T00:00:00Z&to=2026-01-03T01:00:00%2B01:00')).to.deep.equal([1, 3]);
      expect(await ns(`&stream=${stream}&from=2026-01-04T00:00:00Z`)).to.deep.equal([4]);
    });

    it('pages with a signed cursor, and resumes from a position with after', async () => {
      await appendMany(server.stores.eventStore, tenantId, 7);
      const pages = await allPages('type=Probed&limit=3');
      expect(pages.map((page) => page.length)).to.deep.equal([3, 3, 1]);
      const all = pages.flat();
      expect(all.map((event) => (event.data as { i: number }).i)).to.deep.equal([0, 1, 2, 3, 4, 5, 6]);

      const rest = await events(`?type=Probed&after=${all[4]!.position}`);
      expect((rest.body.data as RecordedEvent[]).map((event) => event.id)).to.deep.equal(
        all.slice(5).map((event) => event.id),
      );
      // A full last page that ends the store says so: no empty page after it.
      expect((await events('?type=Probed&limit=7')).body.nextCursor).to.equal(null);
    });

    it('pages through time-filtered events too, a page at a time', async () => {
      const store = server.stores.eventStore;
      await store.appendToStream(
        `clock-${tenantId}_c2`,
        Array.from({ length: 10 }, (_, n) =>
          probe(tenantId, 'Ticked', { n }, `2026-01-0${n % 2 === 0 ? 1 : 9}T00:00:00.000Z`),
        ),
        'no_stream',
      );
      const pages = await allPages('type=Ticked&to=2026-01-02T00:00:00Z&limit=2');
      const ns = pages.flat().map((event) => (event.data as { n: number }).n);
      expect(ns).to.deep.equal([0, 2, 4, 6, 8]);
      expect(pages.every((page) => page.length <= 2)).to.equal(true);
    });

    it('refuses bad parameters with 400 naming them', async () => {
      await appendMany(server.stores.eventStore, tenantId, 3);
      const first = await events('?type=Probed&limit=1');
      const cursor = first.body.nextCursor as string;
      expectProblem(await events('?limit=0'), 400, 'limit');
      expectProblem(await events('?limit=1001'), 400, 'limit');
      expectProblem(await events('?after=-1'), 400, 'after');
      expectProblem(await events('?type=Not%20A%20Type'), 400, 'type');
      expectProblem(await events('?type='), 400, 'type');
      expectProblem(await events('?stream=nonsense'), 400, 'stream');
      expectProblem(await events('?from=yesterday'), 400, 'from');
      expectProblem(await events('?from=2026-01-02T00:00:00Z&to=2026-01-01T00:00:00Z'), 400, 'to');
      expectProblem(await events('?sort=position'), 400, 'sort');
      expectProblem(await events('?cursor=garbage'), 400, 'cursor');
      expectProblem(await events(`?type=Probed&cursor=${cursor}&after=1`), 400, 'after');
      // A cursor resumes its own query only.
      expectProblem(await events(`?type=Ticked&cursor=${cursor}`), 400, 'cursor');
      expect((await events(`?type=Probed&cursor=${cursor}`)).status).to.equal(200);
    });

    describe('as NDJSON', () => {
      const download = (query = '', init: RequestInit = {}) =>
        fetch(`${server.url}/v1/tenants/${tenantId}/events${query}`, {
          ...init,
          headers: { ...admin, Accept: 'application/x-ndjson' },
        });

      it('streams every matching event, one per line, reading the store page by page', async () => {
        await appendMany(server.stores.eventStore, tenantId, 2500);
        const reads = countReads(server.stores.eventStore, tenantId);
        try {
          const response = await download('?type=Probed');
          expect(response.status).to.equal(200);
          expect(response.headers.get('content-type')).to.match(/^application\/x-ndjson/);
          const lines = ndjson(await response.text());
          expect(lines.map((event) => (event.data as { i: number }).i)).to.deep.equal(
            Array.from({ length: 2500 }, (_, i) => i),
          );
          expect(lines[0]).to.have.all.keys(
            'id',
            'type',
            'streamName',
            'streamVersion',
            'position',
            'data',
            'metadata',
            'hash',
            'previousHash',
          );
          expect(reads.calls, 'store pages read').to.be.at.least(3);
        } finally {
          reads.restore();
        }
        // The same events as the JSON pages, and limit caps the lines.
        const json = (await allPages('type=Probed&limit=1000')).flat();
        const capped = ndjson(await (await download('?type=Probed&limit=1200')).text());
        expect(capped).to.deep.equal(json.slice(0, 1200));
        const resumed = ndjson(await (await download(`?type=Probed&after=${json[2399]!.position}`)).text());
        expect(resumed).to.deep.equal(json.slice(2400));
      });

      it('answers a problem, not a stream, when the parameters are bad', async () => {
        const response = await download('?type=%20');
        expect(response.status).to.equal(400);
        expect(response.headers.get('content-type')).to.match(/^application\/problem\+json/);
      });
    });
  });

  describe('GET /v1/tenants/{tenantId}/observations/{id}/history', () => {
    const history = (id: string, headers: Record<string, string> = {}) =>
      request(`${server.url}/v1/tenants/${tenantId}/observations/${id}/history`, {
        headers: { ...admin, ...headers },
      });

    it('lists every version with the event that made it and the observation after it', async () => {
      const fox = await observe({ observedAt: '2026-05-01T09:30:00Z', notes: 'fox', attributes: { n: 1 } });
      await patch(fox.id, { notes: 'red fox' });
      await patch(fox.id, { attributes: { n: 2 } });

      const response = await history(fox.id);
      expect(response.status, JSON.stringify(response.body)).to.equal(200);
      expect(response.headers.get('etag')).to.equal('"2"');
      const versions = response.body as {
        version: number;
        event: RecordedEvent;
        observation: Record<string, unknown>;
      }[];
      expect(versions.map((v) => v.version)).to.deep.equal([0, 1, 2]);
      expect(versions.map((v) => v.event.type)).to.deep.equal([
        'ObservationRecorded',
        'ObservationUpdated',
        'ObservationUpdated',
      ]);
      expect(versions[1]!.event).to.have.all.keys('id', 'type', 'data', 'metadata', 'position');
      expect(versions[1]!.event.data).to.deep.equal({ observationId: fox.id, changes: { notes: 'red fox' } });
      expect(
        versions.map((v) => [v.observation.notes, v.observation.attributes, v.observation.version]),
      ).to.deep.equal([
        ['fox', { n: 1 }, 0],
        ['red fox', { n: 1 }, 1],
        ['red fox', { n: 2 }, 2],
      ]);
      // The last version is the observation as a single read folds it.
      const current = await request(`${server.url}/v1/tenants/${tenantId}/observations/${fox.id}`, {
        headers: admin,
      });
      expect(versions[2]!.observation).to.deep.equal(current.body);
      // The events are the ones the tenant's history holds, at the same positions.
      const stream = (await events(`?stream=observation-${tenantId}_${fox.id}`)).body.data as RecordedEvent[];
      expect(versions.map((v) => [v.event.id, v.event.position])).to.deep.equal(
        stream.map((event) => [event.id, event.position]),
      );
      const cached = await fetch(`${server.url}/v1/tenants/${tenantId}/observations/${fox.id}/history`, {
        headers: { ...admin, 'If-None-Match': '"2"' },
      });
      expect(cached.status).to.equal(304);
    });

    it('answers 404 for an observation that does not exist', async () => {
      expectProblem(await history('o_00000000000000000000000000'), 404);
    });
  });
});

describe('an NDJSON download of more events than the connection holds', () => {
  const total = 40_000;
  const pages = total / 1000;
  let server: TestServer;
  let tenantId: string;
  let admin: Record<string, string>;
  const download = (query = '', init: RequestInit = {}) =>
    fetch(`${server.url}/v1/tenants/${tenantId}/events${query}`, {
      ...init,
      headers: { ...admin, Accept: 'application/x-ndjson' },
    });
  before(async function () {
    this.timeout(60_000);
    server = await startTestServer();
    const tenant = await withTenant(server);
    tenantId = tenant.tenantId;
    admin = { 'X-API-Key': tenant.adminKey };
    // About 1 MB per page of 1,000 events: far more than the socket buffers hold.
    await appendMany(server.stores.eventStore, tenantId, total, 700);
  });
  after(async () => server.close());

  it('reads no further ahead than the client takes (backpressure)', async () => {
    const reads = countReads(server.stores.eventStore, tenantId);
    const abort = new AbortController();
    try {
      const response = await download('?type=Probed', { signal: abort.signal });
      const reader = response.body!.getReader();
      expect((await reader.read()).done).to.equal(false);
      // On purpose: real time for the server to fill the socket buffers, then to show it reads no further.
      await sleep(500);
      const stalled = reads.calls;
      await sleep(300);
      expect(reads.calls, 'the server waits for the client').to.equal(stalled);
      expect(stalled, 'pages read while the client reads nothing').to.be.below(pages / 2);
      // Reading on makes it read on.
      let bytes = 0;
      while (bytes < 20_000_000) {
        const chunk = await reader.read();
        if (chunk.done) break;
        bytes += chunk.value.length;
      }
      expect(reads.calls).to.be.above(stalled);
    } finally {
      abort.abort();
      reads.restore();
    }
  });

  it('stops reading the store when the client disconnects', async () => {
    // Slow pages, and a client that reads everything it gets: only the disconnect can stop the reads.
    const reads = countReads(server.stores.eventStore, tenantId, 20);
    const abort = new AbortController();
    try {
      const response = await download('?type=Probed', { signal: abort.signal });
      const reader = response.body!.getReader();
      let lines = 0;
      while (lines < 3000) {
        const chunk = await reader.read();
        if (chunk.done) throw new Error('the download ended early');
        lines += Buffer.from(chunk.value).toString('utf8').split('\n').length - 1;
      }
      abort.abort();
      // On purpose: real time for the server to notice the disconnect, then to show it reads no further.
      await sleep(200);
      const atDisconnect = reads.calls;
      await sleep(600);
      expect(reads.calls, 'no page read after the disconnect').to.equal(atDisconnect);
      expect(atDisconnect).to.be.below(pages);
    } finally {
      reads.restore();
    }
  });
});

/** `order=desc`: the audit screen's newest-first pages, on each event store the service runs on. */
const newestFirstSuite = (env: () => Record<string, string>) => {
  let server: TestServer;
  let tenantId: string;
  let admin: Record<string, string>;
  const events = (query: string, headers: Record<string, string> = {}) =>
    request(`${server.url}/v1/tenants/${tenantId}/events${query}`, { headers: { ...admin, ...headers } });
  const numbers = (response: Response) =>
    (response.body.data as RecordedEvent<string, { i: number }>[]).map((event) => event.data.i);

  before(async () => {
    server = await startTestServer({ RATE_LIMIT: 'off', ...env() });
    const tenant = await withTenant(server, 'newest');
    tenantId = tenant.tenantId;
    admin = { 'X-API-Key': tenant.adminKey };
    const last = await appendMany(server.stores.eventStore, tenantId, 7);
    // Newest-first pages start at the store's safe head, which on PostgreSQL may stay below a commit for a
    // few milliseconds while a transaction that began before it is still open (the projections' own).
    await eventually(async () =>
      (await server.stores.eventStore.headPosition()) >= last ? true : undefined,
    );
  });
  after(async () => server.close());

  it('lists newest first, each page older than the one before, every event once', async () => {
    const first = await events('?type=Probed&order=desc&limit=3');
    expect(first.status, JSON.stringify(first.body)).to.equal(200);
    expect(numbers(first)).to.deep.equal([6, 5, 4]);
    const second = await events(`?type=Probed&order=desc&limit=3&cursor=${first.body.nextCursor as string}`);
    expect(numbers(second)).to.deep.equal([3, 2, 1]);
    const last = await events(`?type=Probed&order=desc&limit=3&cursor=${second.body.nextCursor as string}`);
    expect(numbers(last)).to.deep.equal([0]);
    expect(last.body.nextCursor).to.equal(null);
    // A full page that reaches the first event says so.
    expect((await events('?type=Probed&order=desc&limit=7')).body.nextCursor).to.equal(null);
  });

  it('keeps its pages where they were when newer events arrive (keyset, not offset)', async () => {
    const first = await events('?type=Probed&order=desc&limit=3');
    await server.stores.eventStore.appendToStream(
      `probe-${tenantId}_late`,
      [probe(tenantId, 'Probed', { i: 7 })],
      'no_stream',
    );
    const second = await events(`?type=Probed&order=desc&limit=3&cursor=${first.body.nextCursor as string}`);
    expect(numbers(second)).to.deep.equal([3, 2, 1]);
    expect(numbers(await events('?type=Probed&order=desc&limit=1'))).to.deep.equal([7]);
  });

  it('is the commit order reversed, with the stream filter too', async () => {
    const forward = (await events('?order=asc&limit=1000')).body.data as RecordedEvent[];
    const backward = (await events('?order=desc&limit=1000')).body.data as RecordedEvent[];
    expect(backward.map((event) => event.id)).to.deep.equal(forward.map((event) => event.id).reverse());
    const stream = `probe-${tenantId}_b0`;
    const one = await events(`?stream=${stream}&order=desc&limit=2`);
    expect((one.body.data as RecordedEvent[]).map((event) => event.streamVersion)).to.deep.equal([6, 5]);
  });

  it('refuses what newest first cannot do, naming the parameter', async () => {
    const ascending = await events('?type=Probed&limit=1');
    expectProblem(await events('?order=sideways'), 400, 'order');
    expectProblem(await events('?order=desc&after=3'), 400, 'after');
    expectProblem(await events('?order=desc', { Accept: 'application/x-ndjson' }), 400, 'order');
    // A cursor of commit order does not resume newest first.
    expectProblem(
      await events(`?type=Probed&order=desc&cursor=${ascending.body.nextCursor as string}`),
      400,
      'cursor',
    );
  });
};

describe('the history API newest first, on SQLite', () => newestFirstSuite(() => ({})));
describePostgres('the history API newest first, on PostgreSQL', () => {
  const database = suiteDatabase();
  newestFirstSuite(() => ({ DATABASE_URL: database() }));
});
