import { expect } from 'chai';
import { observationsProjection } from '../../projections/observations.js';
import { verifyTenant } from '../../src/audit/verify.js';
import { skipParked } from '../../src/readmodels/parked-commands.js';
import { parkingStream } from '../../src/readmodels/parking.js';
import { rebuild } from '../../src/readmodels/rebuild.js';
import { anObservationRecorded } from '../support/events.js';
import { request, startTestServer, withTenant, type TestServer } from '../support/server.js';

/** Attributes nested 1,000 levels deep: more than SQLite's JSON functions accept (or MongoDB's BSON). */
const tooDeep = (): Record<string, unknown> => {
  let nested: Record<string, unknown> = { leaf: true };
  for (let depth = 1; depth < 1000; depth += 1) nested = { nested };
  return nested;
};

/**
 * An observation the read side cannot hold, appended straight to the event store: the write side is to
 * refuse such attributes, but events written before that bound (or by other means) are still there.
 */
const appendPoison = async (server: TestServer, tenantId: string) => {
  const { observationId, stream, event } = anObservationRecorded(tenantId, {
    notes: 'nested too deep',
    attributes: tooDeep(),
  });
  const result = await server.stores.eventStore.appendToStream(stream, [event], 'no_stream');
  return { observationId, position: result.lastPosition };
};

describe('a poison event in the observations projection', () => {
  let server: TestServer;
  let poisoner: Awaited<ReturnType<typeof withTenant>>;
  let other: Awaited<ReturnType<typeof withTenant>>;
  let poison: { observationId: string; position: number };

  const observations = (tenant: typeof other) => `${server.url}/v1/tenants/${tenant.tenantId}/observations`;
  const runner = () => server.service.projections.of(observationsProjection).runner;
  const decisions = async () =>
    (await server.stores.eventStore.readStream(parkingStream(poisoner.tenantId, 'observations'))).map(
      (event) => ({
        type: event.type,
        actor: event.metadata.actor,
        position: (event.data as { position: number }).position,
      }),
    );

  before(async () => {
    server = await startTestServer();
    poisoner = await withTenant(server, 'poisoner');
    other = await withTenant(server, 'bystander');
    poison = await appendPoison(server, poisoner.tenantId);
  });
  after(async () => server.close());

  it('does not delay another tenant: its observation is listed within a second', async () => {
    const written = Date.now();
    const created = await request(observations(other), {
      method: 'POST',
      body: { observedAt: '2026-05-01T10:00:00Z', attributes: { species: 'fox' } },
      headers: { 'X-API-Key': other.adminKey },
    });
    expect(created.status, JSON.stringify(created.body)).to.equal(201);
    expect(created.body.id).to.be.a('string');
    let listed = false;
    while (!listed && Date.now() - written < 1000) {
      const list = await request(observations(other), { headers: { 'X-API-Key': other.adminKey } });
      listed = (list.body.data as { id: string }[]).some((o) => o.id === created.body.id);
      if (!listed) await new Promise((resolve) => setTimeout(resolve, 20));
    }
    expect(listed, 'listed within 1 s').to.equal(true);
    // Read-your-writes waits answer too, instead of a 503 behind the poison.
    const fresh = await request(`${observations(other)}?minPosition=${created.headers.get('x-position')}`, {
      headers: { 'X-API-Key': other.adminKey },
    });
    expect(fresh.status).to.equal(200);
  });

  it('parks the event with its position, tenant, type and error, and records the decision', async () => {
    const [parked, ...more] = await server.stores.readModels.listParked('observations');
    expect(more).to.deep.equal([]);
    expect(parked).to.include({
      projection: 'observations',
      position: poison.position,
      tenantId: poisoner.tenantId,
      eventType: 'ObservationRecorded',
    });
    expect(parked?.error).to.match(/JSON/);
    expect(runner().status()).to.include({ state: 'running', parked: 1, lastError: null });
    expect(runner().status().checkpoint).to.be.greaterThan(poison.position);
    expect(await decisions()).to.deep.equal([
      { type: 'ProjectionEventParked', actor: 'system:projections', position: poison.position },
    ]);
    const list = await request(observations(poisoner), { headers: { 'X-API-Key': poisoner.adminKey } });
    expect(list.status).to.equal(200);
    expect((list.body.data as { id: string }[]).map((o) => o.id)).not.to.include(poison.observationId);
  });

  it('shows the decision in the tenant’s history, whose chains still verify', async () => {
    const history = await request(
      `${server.url}/v1/tenants/${poisoner.tenantId}/events?type=ProjectionEventParked`,
      { headers: { 'X-API-Key': poisoner.adminKey } },
    );
    expect(history.status, JSON.stringify(history.body)).to.equal(200);
    expect(history.body.data).to.have.length(1);
    expect(history.body.data[0]).to.deep.include({
      type: 'ProjectionEventParked',
      streamName: parkingStream(poisoner.tenantId, 'observations'),
    });
    expect(history.body.data[0].data).to.include({ projection: 'observations', position: poison.position });
    const report = await verifyTenant(server.stores.eventStore, poisoner.tenantId);
    expect(report.broken).to.equal(null);
  });

  describe('a rebuild', () => {
    it('parks the same event instead of failing, without recording it twice', async () => {
      const outcome = await rebuild(observationsProjection, server.stores);
      expect(outcome).to.include({ status: 'swapped', parked: 1 });
      expect(
        (await server.stores.readModels.listParked('observations')).map((p) => p.position),
      ).to.deep.equal([poison.position]);
      expect(await decisions()).to.have.length(1);
      const list = await request(observations(other), { headers: { 'X-API-Key': other.adminKey } });
      expect(list.body.data).to.have.length(1);
    });

    it('parks it again, recorded, after it was skipped', async () => {
      const [parked] = await server.stores.readModels.listParked('observations');
      await skipParked(server.stores, parked!);
      expect(await server.stores.readModels.listParked('observations')).to.deep.equal([]);
      const outcome = await rebuild(observationsProjection, server.stores, { tenantId: poisoner.tenantId });
      expect(outcome).to.include({ status: 'swapped', parked: 1 });
      expect(
        (await server.stores.readModels.listParked('observations')).map((p) => p.position),
      ).to.deep.equal([poison.position]);
      expect(await decisions()).to.deep.equal([
        { type: 'ProjectionEventParked', actor: 'system:projections', position: poison.position },
        { type: 'ProjectionEventSkipped', actor: 'cli', position: poison.position },
        { type: 'ProjectionEventParked', actor: 'cli', position: poison.position },
      ]);
      // The build's own list is gone once it is adopted.
      expect(
        (await server.stores.readModels.listParked()).filter((p) => p.projection !== 'observations'),
      ).to.deep.equal([]);
    });
  });
});
