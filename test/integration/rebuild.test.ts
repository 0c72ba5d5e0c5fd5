import { expect } from 'chai';
import { projections } from '../../src/domains.js';
import type { RegisteredProjection } from '../../src/readmodels/registered.js';
import { observationsProjection } from '../../projections/observations.js';
import { platformPartition } from '../../src/readmodels/aggregate-projection.js';
import type { ReadModelStore } from '../../src/readmodels/port.js';
import type { Projection } from '../../src/readmodels/projection.js';
import {
  buildSnapshot,
  dropSnapshot,
  findSnapshot,
  listBuilds,
  projectionStatus,
  rebuild,
  type BuildProgress,
} from '../../src/readmodels/rebuild.js';
import { testClock, type TestClock } from '../support/clock.js';
import { createTestDatabase, describePostgres } from '../support/postgres.js';
import { request, startTestServer, withTenant, type TestServer } from '../support/server.js';

let server: TestServer;

const call = (
  tenant: { tenantId: string; adminKey: string },
  path: string,
  init: Parameters<typeof request>[1] = {},
) =>
  request(`${server.url}/v1/tenants/${tenant.tenantId}${path}`, {
    ...init,
    headers: { 'X-API-Key': tenant.adminKey, ...init.headers },
  });

const created = async (response: Promise<Awaited<ReturnType<typeof request>>>) => {
  const { status, body } = await response;
  expect(status, JSON.stringify(body)).to.equal(201);
  return body as { id: string };
};

/** Waits until every runner of the service has applied everything in the store. */
const caughtUp = async () => {
  const head = await server.stores.eventStore.headPosition();
  for (const runner of server.service.runners) expect(await runner.waitFor(head, 10_000)).to.equal(true);
};

/** Every document of a read model, for the given partitions, in a total order. */
const contents = async (projection: Projection<unknown>, partitions: string[], collection?: string) => {
  const sortField = Object.keys(projection.collection.fields)[0]!;
  const all: unknown[] = [];
  for (const tenantId of partitions) {
    all.push(
      ...(await server.stores.readModels.list(collection ?? projection.collection.name, {
        tenantId,
        filters: [],
        sort: { field: sortField, direction: 'asc' },
        limit: 100_000,
      })),
    );
  }
  return all;
};

const partitionsOf = (entry: RegisteredProjection, tenants: string[]) =>
  entry.partition === 'platform' ? [platformPartition] : tenants;

/** Observations, locations, visits, credentials and webhooks of a tenant, with updates and a deletion. */
const activity = async (tenant: { tenantId: string; adminKey: string }, n: number) => {
  const location = await created(
    call(tenant, '/locations', {
      method: 'POST',
      body: { name: `Meadow ${n}`, position: { lat: 45, lon: 7 } },
    }),
  );
  const gone = await created(
    call(tenant, '/locations', {
      method: 'POST',
      body: { name: `Gone ${n}`, position: { lat: 46, lon: 8 } },
    }),
  );
  expect((await call(tenant, `/locations/${gone.id}`, { method: 'DELETE' })).status).to.equal(204);
  for (let i = 0; i < 5; i += 1) {
    const observation = await created(
      call(tenant, '/observations', {
        method: 'POST',
        body: {
          observedAt: `2026-05-0${1 + i}T09:30:00Z`,
          position: { lat: 45 + i / 10, lon: 7 },
          locationId: location.id,
          attributes: { species: 'fox', n: i },
        },
      }),
    );
    if (i % 2 === 0) {
      const patched = await call(tenant, `/observations/${observation.id}`, {
        method: 'PATCH',
        body: { notes: `seen again ${i}`, attributes: { count: i } },
      });
      expect(patched.status, JSON.stringify(patched.body)).to.equal(200);
    }
  }
  await created(
    call(tenant, '/visits', {
      method: 'POST',
      body: {
        locationId: location.id,
        startedAt: '2026-05-01T08:00:00Z',
        participants: ['Ada'],
        notes: null,
      },
    }),
  );
};

/** The suite on one backend: `env` is the service's environment for each test (a fresh database). */
const rebuildSuite = (env: () => Record<string, string>) => {
  let tenants: { tenantId: string; adminKey: string }[];
  let clock: TestClock;

  beforeEach(async () => {
    clock = testClock();
    server = await startTestServer(env(), { options: { clock } });
    tenants = [await withTenant(server, 'acme'), await withTenant(server, 'globex')];
    for (const [n, tenant] of tenants.entries()) await activity(tenant, n);
    await caughtUp();
  });
  afterEach(async () => server.close());

  it('rebuilds every read model into tables equal to the live ones, beside a running service', async () => {
    const ids = tenants.map((t) => t.tenantId);
    const before = new Map<string, unknown[]>();
    for (const entry of projections) {
      before.set(entry.projection.name, await contents(entry.projection, partitionsOf(entry, ids)));
    }
    expect(before.get('observations')).to.have.length(10);

    for (const entry of projections) {
      const outcome = await rebuild(entry.projection, server.stores);
      expect(outcome.status, entry.projection.name).to.equal('swapped');
      expect(outcome.checkpoint).to.equal(await server.stores.eventStore.headPosition());
    }
    for (const entry of projections) {
      const after = await contents(entry.projection, partitionsOf(entry, ids));
      expect(after, entry.projection.name).to.deep.equal(before.get(entry.projection.name));
    }
    const builds = await listBuilds(server.stores.readModels);
    expect(builds.filter((b) => b.status === 'swapped')).to.have.length(projections.length);

    // The service's runners write the swapped-in tables: a new observation shows in the list at once.
    const [acme] = tenants;
    const fresh = await call(acme!, '/observations', {
      method: 'POST',
      body: { observedAt: '2026-06-01T09:30:00Z', position: null, attributes: {} },
    });
    const position = fresh.headers.get('X-Position');
    const listed = await call(acme!, `/observations?limit=100&minPosition=${position}`);
    expect(listed.status).to.equal(200);
    expect(listed.body.data.map((o: { id: string }) => o.id)).to.include(fresh.body.id);
    const status = await projectionStatus(observationsProjection, server.stores);
    expect(status).to.deep.include({ lagEvents: 0, lagSeconds: 0, lastError: null });
  });

  it('stops when aborted, leaving the live read model untouched, and resumes from its own checkpoint', async () => {
    const projection = observationsProjection as Projection<unknown>;
    const ids = tenants.map((t) => t.tenantId);
    const before = await contents(projection, ids);
    const liveCheckpoint = await server.stores.readModels.getCheckpoint(projection.name);
    const controller = new AbortController();
    const seen: BuildProgress[] = [];
    const first = await rebuild(projection, server.stores, {
      batchSize: 3,
      signal: controller.signal,
      onProgress: (progress) => {
        seen.push(progress);
        controller.abort();
      },
    });
    expect(first.status).to.equal('interrupted');
    expect(first.checkpoint).to.be.greaterThan(0).and.lessThan(liveCheckpoint);
    expect(seen[0]?.phase).to.equal('building');
    expect(await contents(projection, ids)).to.deep.equal(before);
    // The live runner keeps going meanwhile (webhook deliveries append events), so its checkpoint may
    // only have moved forward; the aborted build's checkpoint, far behind it, was not swapped in.
    expect(await server.stores.readModels.getCheckpoint(projection.name)).to.be.at.least(liveCheckpoint);

    const second = await rebuild(projection, server.stores, { batchSize: 3 });
    expect(second.status).to.equal('swapped');
    expect(second.resumedFrom).to.equal(first.checkpoint);
    expect(second.build.id).to.equal(first.build.id);
    expect(await contents(projection, ids)).to.deep.equal(before);
  });

  it('resumes after a batch whose answer was lost, into the same table as the live one', async () => {
    const projection = observationsProjection as Projection<unknown>;
    const ids = tenants.map((t) => t.tenantId);
    const before = await contents(projection, ids);
    // The third batch of the build is committed, then its answer lost, as when the connection drops.
    let buildCommits = 0;
    const { readModels } = server.stores;
    const losing: ReadModelStore = Object.create(readModels, {
      commit: {
        value: async (...args: Parameters<ReadModelStore['commit']>) => {
          await readModels.commit(...args);
          if (args[0].startsWith('build:') && ++buildCommits === 3)
            throw Object.assign(new Error('connection lost'), { code: 'EIO' });
        },
      },
    }) as ReadModelStore;
    let error: unknown;
    await rebuild(projection, { ...server.stores, readModels: losing }, { batchSize: 3 }).catch(
      (e: unknown) => (error = e),
    );
    expect(String(error)).to.match(/connection lost/);
    expect(await contents(projection, ids)).to.deep.equal(before);

    const resumed = await rebuild(projection, server.stores, { batchSize: 3 });
    expect(resumed.status).to.equal('swapped');
    expect(resumed.resumedFrom).to.be.greaterThan(0);
    expect(resumed.parked).to.equal(0);
    expect(await contents(projection, ids)).to.deep.equal(before);
  });

  it('rebuilds one tenant’s documents, replacing only theirs', async () => {
    const [acme, globex] = tenants.map((t) => t.tenantId) as [string, string];
    const projection = observationsProjection as Projection<unknown>;
    const before = await contents(projection, [acme, globex]);
    // A bug once wrote documents no event explains, in both tenants.
    const head = await server.stores.eventStore.headPosition();
    await server.stores.readModels.commit(
      'corruption',
      [acme, globex].map((tenantId) => ({
        collection: projection.collection.name,
        tenantId,
        id: 'o_bogus',
        position: head,
        doc: { id: 'o_bogus', tenantId, observedAt: '2026-01-01T00:00:00Z' },
      })),
      0,
    );
    const outcome = await rebuild(projection, server.stores, { tenantId: acme });
    expect(outcome.status).to.equal('swapped');
    const getBogus = (tenantId: string) =>
      server.stores.readModels.get(projection.collection.name, { tenantId, id: 'o_bogus' });
    expect(await getBogus(acme)).to.equal(null);
    expect(await getBogus(globex)).to.not.equal(null);
    const after = (await contents(projection, [acme, globex])).filter(
      (doc) => (doc as { id: string }).id !== 'o_bogus',
    );
    expect(after).to.deep.equal(before);
  });

  it('builds a snapshot as of a past position or time, beside the live read model', async () => {
    const [acme] = tenants;
    const projection = observationsProjection as Projection<unknown>;
    const thenPosition = await server.stores.eventStore.headPosition();
    const then = await contents(projection, [acme!.tenantId]);
    // Every event so far occurred by thenTime, and every later one a second after it (the service's clock).
    const thenTime = clock().toISOString();
    clock.advance(1000);
    // Afterwards: one observation changes, another is recorded.
    const first = then[0] as { id: string };
    await call(acme!, `/observations/${first.id}`, { method: 'PATCH', body: { notes: 'changed later' } });
    await created(
      call(acme!, '/observations', {
        method: 'POST',
        body: { observedAt: '2026-06-01T09:30:00Z', position: null, attributes: {} },
      }),
    );
    await caughtUp();
    expect(await contents(projection, [acme!.tenantId])).to.not.deep.equal(then);

    const byPosition = await buildSnapshot(projection, server.stores, {
      into: 'by_position',
      until: { position: thenPosition },
    });
    expect(byPosition.status).to.equal('complete');
    expect(byPosition.checkpoint).to.equal(thenPosition);
    const byTime = await buildSnapshot(projection, server.stores, {
      into: 'by_time',
      until: { time: thenTime },
    });
    for (const name of ['by_position', 'by_time']) {
      const snapshot = await findSnapshot(server.stores.readModels, name);
      expect(await contents(projection, [acme!.tenantId], snapshot.id), name).to.deep.equal(then);
    }
    expect(byTime.checkpoint).to.equal(thenPosition);
    // The live read model moved on, and is still what the API lists.
    expect(await contents(projection, [acme!.tenantId])).to.have.length(then.length + 1);

    // A name is taken until the snapshot is dropped.
    let error: unknown;
    await buildSnapshot(projection, server.stores, { into: 'by_time', until: { time: thenTime } }).catch(
      (e: unknown) => (error = e),
    );
    expect(String(error)).to.match(/exists already/);
    await dropSnapshot(server.stores, 'by_time', () => projection.collection);
    await findSnapshot(server.stores.readModels, 'by_time').catch((e: unknown) => (error = e));
    expect(String(error)).to.match(/No snapshot named by_time; snapshots: by_position \(observations\)/);
  });
};

describe('projection rebuilds and snapshots, on SQLite', () => rebuildSuite(() => ({})));
// PostgreSQL's builds commit without waiting for the flush and write each batch as one JSON array
// (src/readmodels/postgres.ts): the same tables as the live runner's must come out of them.
describePostgres('projection rebuilds and snapshots, on PostgreSQL', () =>
  rebuildSuite(() => ({ DATABASE_URL: createTestDatabase() })),
);
