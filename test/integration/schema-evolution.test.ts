import { expect } from 'chai';
import Database from 'better-sqlite3';
import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import type { RecordedEvent } from '../../src/core/events.js';
import { newId } from '../../src/core/ids.js';
import { streamName } from '../../src/core/streams.js';
import type { PersistentEvent } from '../../src/eventstore/port.js';
import { eventHash, genesisHash } from '../../src/eventstore/hash-chain.js';
import type { ObservationRecordedV1 } from '../../src/observations/upcasters.js';
import { startReceiver, type Receiver } from '../support/receiver.js';
import { request, startTestServer, withTenant, type TestServer } from '../support/server.js';
import { eventually } from '../support/wait.js';

const secret = 'whsec-schema-evolution-0123456789';

/**
 * The one real schema change so far: `ObservationRecorded` v1 left optional fields out instead of making
 * them null, and had no attributes. A v1 event is written straight to the store, as an old release wrote
 * it, and every read path must show it in today's shape, v2.
 */
describe('schema evolution: a v1 ObservationRecorded read as v2 everywhere', () => {
  let server: TestServer;
  let hooks: Receiver;
  let tenantId: string;
  let admin: Record<string, string>;
  let observationId: string;
  let stream: string;
  let written: { id: string; position: number };

  const v1Data = (id: string): ObservationRecordedV1 => ({
    observationId: id,
    observedAt: '2025-03-01T07:00:00.000Z',
    notes: 'an old fox',
  });
  const v2Data = (id: string) => ({
    observationId: id,
    observedAt: '2025-03-01T07:00:00.000Z',
    position: null,
    locationId: null,
    visitId: null,
    notes: 'an old fox',
    attributes: {},
  });
  const api = (path: string, init: Parameters<typeof request>[1] = {}) =>
    request(`${server.url}/v1/tenants/${tenantId}${path}`, {
      ...init,
      headers: { ...admin, ...init.headers },
    });
  /** The row as it sits in the SQLite file, read beside the running service. */
  const storedRow = (eventId: string) => {
    const db = new Database(join(server.dataDir, 'events.db'), { readonly: true });
    try {
      const row = db.prepare('SELECT data, metadata FROM events WHERE event_id = ?').get(eventId) as {
        data: string;
        metadata: string;
      };
      return {
        data: JSON.parse(row.data) as unknown,
        metadata: JSON.parse(row.metadata) as RecordedEvent['metadata'],
      };
    } finally {
      db.close();
    }
  };

  before(async () => {
    hooks = await startReceiver(secret);
    server = await startTestServer({ WEBHOOK_ALLOW_HTTP: 'true', WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true' });
    const tenant = await withTenant(server, 'legacy');
    tenantId = tenant.tenantId;
    admin = { 'X-API-Key': tenant.adminKey };
    const subscribed = await api('/webhooks', {
      method: 'POST',
      body: { url: hooks.url, events: ['observation.created'], secret },
    });
    expect(subscribed.status, JSON.stringify(subscribed.body)).to.equal(201);

    observationId = newId('o', new Date('2025-03-01T07:00:00Z'));
    stream = streamName('observation', tenantId, observationId);
    const id = randomUUID();
    const result = await server.stores.eventStore.appendToStream(
      stream,
      [
        {
          id,
          type: 'ObservationRecorded',
          data: v1Data(observationId),
          metadata: {
            tenantId,
            actor: 'apikey:k_legacy',
            correlationId: 'legacy',
            causationId: null,
            occurredAt: '2025-03-01T07:05:00.000Z',
            schemaVersion: 1,
          },
        },
      ],
      'no_stream',
    );
    written = { id, position: result.lastPosition };
  });
  after(async () => {
    await hooks.close();
    await server.close();
  });

  const expectedObservation = () => {
    const { observationId: id, ...fields } = v2Data(observationId);
    return {
      id,
      tenantId,
      ...fields,
      media: [],
      createdAt: '2025-03-01T07:05:00.000Z',
      updatedAt: '2025-03-01T07:05:00.000Z',
      version: 0,
    };
  };

  it('stays stored as it was written: version 1, in the v1 shape', () => {
    const row = storedRow(written.id);
    expect(row.data).to.deep.equal(v1Data(observationId));
    expect(row.metadata.schemaVersion).to.equal(1);
  });

  it('folds as v2: GET of the single observation', async () => {
    const response = await api(`/observations/${observationId}`);
    expect(response.status, JSON.stringify(response.body)).to.equal(200);
    expect(response.body).to.deep.equal(expectedObservation());
  });

  it('projects as v2: the list', async () => {
    const response = await api(`/observations?minPosition=${written.position}`);
    expect(response.status, JSON.stringify(response.body)).to.equal(200);
    expect(response.body.data).to.deep.equal([expectedObservation()]);
  });

  it('shows v2 with schemaVersion 2 in the history API, both the tenant history and the observation history, and v1 in the download', async () => {
    const response = await api(`/events?stream=${stream}`);
    expect(response.status, JSON.stringify(response.body)).to.equal(200);
    const [event] = response.body.data as RecordedEvent[];
    expect(event).to.deep.include({
      id: written.id,
      type: 'ObservationRecorded',
      data: v2Data(observationId),
    });
    expect(event!.metadata).to.deep.include({ schemaVersion: 2, occurredAt: '2025-03-01T07:05:00.000Z' });

    const lines = await (
      await fetch(`${server.url}/v1/tenants/${tenantId}/events?stream=${stream}`, {
        headers: { ...admin, Accept: 'application/x-ndjson' },
      })
    ).text();
    // The download shows the event as stored, the shape its hash covers (docs/auditors.md §1), with the same
    // hash and previous hash as the page's upcast form.
    const stored = JSON.parse(lines.trim()) as RecordedEvent & { hash: string; previousHash: string };
    expect(stored).to.deep.include({ id: written.id, data: v1Data(observationId) });
    expect(stored.metadata.schemaVersion).to.equal(1);
    const chain = event as RecordedEvent & { hash: string; previousHash: string };
    expect([stored.hash, stored.previousHash]).to.deep.equal([chain.hash, chain.previousHash]);

    const history = await api(`/observations/${observationId}/history`);
    expect(history.body).to.deep.equal([
      {
        version: 0,
        event: {
          id: written.id,
          type: 'ObservationRecorded',
          data: v2Data(observationId),
          metadata: event!.metadata,
          position: written.position,
        },
        observation: expectedObservation(),
      },
    ]);
  });

  it('delivers v2 in the webhook data', async () => {
    const [delivery] = await hooks.waitFor(1);
    expect(delivery!.verified).to.equal(true);
    expect(delivery!.body).to.deep.include({
      id: `evt_${written.id}`,
      type: 'observation.created',
      tenantId,
    });
    expect(delivery!.body.data).to.deep.equal({ ...v2Data(observationId), version: 0 });
  });

  it('hands out v2 on every read path of the store, and the stored form with raw: true', async () => {
    const store = server.stores.eventStore;
    const isV2 = (event: RecordedEvent | undefined) => {
      expect(event?.id).to.equal(written.id);
      expect(event?.data).to.deep.equal(v2Data(observationId));
      expect(event?.metadata.schemaVersion).to.equal(2);
    };
    isV2((await store.readStream(stream))[0]);
    const filter = { tenantId, eventTypes: ['ObservationRecorded'] };
    isV2((await store.readAll({ filter })).events.find((event) => event.id === written.id));

    const seen: RecordedEvent[] = [];
    const catchUp = store.subscribe({ after: 0, filter }, (events) => {
      seen.push(...events);
      return Promise.resolve();
    });
    await eventually(
      () => Promise.resolve(seen.length > 0 ? true : undefined),
      5000,
      'the catch-up subscription',
    );
    await catchUp.stop();
    isV2(seen[0]);

    // A consumer group that parks what it gets: the delivery and the parked event are both v2.
    const group = `schema-evolution-${randomUUID()}`;
    await store.ensurePersistentSubscription(group, { filter, startFrom: 'start', maxRetryCount: 0 });
    const delivered: PersistentEvent[] = [];
    const consumer = store.subscribePersistent(group, (delivery) => {
      delivered.push(delivery);
      return Promise.resolve({ kind: 'nack', action: 'park', reason: 'looked at' });
    });
    const parked = await eventually(
      async () => {
        const list = await store.listParked(group);
        return list.length > 0 ? list : undefined;
      },
      5000,
      'the parked event',
    );
    await consumer.stop();
    isV2(delivered[0]?.event);
    isV2(parked[0]?.event);

    // Tamper evidence covers the stored form: the raw read still verifies against its hash.
    const [raw] = (await store.readAll({ filter: { ...filter, streamPrefixes: [stream] }, raw: true }))
      .events;
    expect(raw?.data).to.deep.equal(v1Data(observationId));
    expect(raw?.metadata.schemaVersion).to.equal(1);
    expect(raw?.hash).to.equal(eventHash(genesisHash, raw!));
  });

  it('handles commands on the upcast state, and writes new events at the current version', async () => {
    const patched = await api(`/observations/${observationId}`, {
      method: 'PATCH',
      body: { attributes: { species: 'fox' } },
    });
    expect(patched.status, JSON.stringify(patched.body)).to.equal(200);
    expect(patched.body).to.deep.include({ attributes: { species: 'fox' }, position: null, version: 1 });

    const created = await api('/observations', {
      method: 'POST',
      body: { observedAt: '2026-05-01T09:30:00Z', notes: 'a new fox' },
    });
    expect(created.status).to.equal(201);
    const [event] = (
      await api(`/events?stream=${streamName('observation', tenantId, created.body.id as string)}`)
    ).body.data as RecordedEvent[];
    const row = storedRow(event!.id);
    expect(row.metadata.schemaVersion).to.equal(2);
    expect(row.data).to.deep.equal({
      observationId: created.body.id,
      observedAt: '2026-05-01T09:30:00.000Z',
      position: null,
      locationId: null,
      visitId: null,
      notes: 'a new fox',
      attributes: {},
    });
  });
});
