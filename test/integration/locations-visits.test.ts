import { expect } from 'chai';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { verifyServiceSignature } from '../../src/webhooks/signing.js';
import { eventually } from '../support/events.js';
import { request as anonymous, startTestServer, withTenant, type TestServer } from '../support/server.js';

let server: TestServer;
let tenantId: string;
let key: string;

const call = (path: string, init: Parameters<typeof anonymous>[1] = {}) =>
  anonymous(`${server.url}/v1/tenants/${tenantId}${path}`, {
    ...init,
    headers: { 'X-API-Key': key, ...init.headers },
  });

const meadow = { name: 'Alder meadow', position: { lat: 45.1, lon: 7.2 } };
const square = (lon: number, lat: number, size = 0.01): [number, number][] => [
  [lon, lat],
  [lon + size, lat],
  [lon + size, lat + size],
  [lon, lat + size],
  [lon, lat],
];

describe('locations and field visits', () => {
  beforeEach(async () => {
    server = await startTestServer({ WEBHOOK_ALLOW_HTTP: 'true', WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true' });
    const owner = await withTenant(server);
    tenantId = owner.tenantId;
    key = owner.adminKey;
  });
  afterEach(async () => server.close());

  const createLocation = async (body: object = meadow) => {
    const response = await call('/locations', { method: 'POST', body });
    expect(response.status, JSON.stringify(response.body)).to.equal(201);
    return response;
  };
  const listIds = async (path: string) => {
    const head = await server.stores.eventStore.headPosition();
    const response = await call(`${path}${path.includes('?') ? '&' : '?'}minPosition=${head}`);
    expect(response.status, JSON.stringify(response.body)).to.equal(200);
    return (response.body.data as { id: string }[]).map((item) => item.id);
  };

  describe('locations', () => {
    it('are created, read, patched with merge semantics, and deleted out of the lists', async () => {
      const created = await createLocation({
        ...meadow,
        boundary: { type: 'Polygon', coordinates: [square(7.2, 45.1)] },
        attributes: { habitat: 'wet' },
      });
      expect(created.body).to.deep.include({
        name: 'Alder meadow',
        position: meadow.position,
        attributes: { habitat: 'wet' },
        version: 0,
      });
      expect(created.headers.get('location')).to.equal(
        `/v1/tenants/${tenantId}/locations/${created.body.id}`,
      );

      const patched = await call(`/locations/${created.body.id}`, {
        method: 'PATCH',
        body: { name: 'Birch meadow', attributes: { habitat: null, grazed: true } },
      });
      expect(patched.body).to.deep.include({
        name: 'Birch meadow',
        attributes: { grazed: true },
        version: 1,
      });
      expect((await call(`/locations/${created.body.id}`)).body.name).to.equal('Birch meadow');
      expect(await listIds('/locations')).to.deep.equal([created.body.id]);

      expect((await call(`/locations/${created.body.id}`, { method: 'DELETE' })).status).to.equal(204);
      expect((await call(`/locations/${created.body.id}`)).status).to.equal(404);
      expect((await call(`/locations/${created.body.id}`, { method: 'DELETE' })).status).to.equal(404);
      expect(await listIds('/locations')).to.deep.equal([]);
      const history = await server.stores.eventStore.readStream(`location-${tenantId}_${created.body.id}`);
      expect(history.map((event) => event.type)).to.deep.equal([
        'LocationCreated',
        'LocationUpdated',
        'LocationDeleted',
      ]);
    });

    it('list by bounding box and name prefix, in pages', async () => {
      const a = (await createLocation({ name: 'Alder', position: { lat: 45, lon: 7 } })).body.id;
      const b = (await createLocation({ name: 'Alpine', position: { lat: 46, lon: 8 } })).body.id;
      const c = (await createLocation({ name: 'Birch', position: { lat: 10, lon: 100 } })).body.id;
      expect(await listIds('/locations')).to.deep.equal([a, b, c]);
      expect(await listIds('/locations?bbox=6,44,9,47')).to.deep.equal([a, b]);
      expect(await listIds('/locations?namePrefix=Al&sort=-name')).to.deep.equal([b, a]);
      const first = await call('/locations?limit=2');
      const second = await call(`/locations?limit=2&cursor=${first.body.nextCursor}`);
      expect([...first.body.data, ...second.body.data].map((l: { id: string }) => l.id)).to.deep.equal([
        a,
        b,
        c,
      ]);
    });

    it('refuse a boundary that is not closed, or has fewer than 4 points, and write nothing', async () => {
      const head = await server.stores.eventStore.headPosition();
      const open = square(7, 45).slice(0, 4);
      const notClosed = await call('/locations', {
        method: 'POST',
        body: { ...meadow, boundary: { type: 'Polygon', coordinates: [open] } },
      });
      expect(notClosed.status).to.equal(400);
      expect(notClosed.body.errors[0]).to.deep.include({ path: 'boundary.coordinates.0' });
      expect(notClosed.body.errors[0].message).to.match(/closed/);
      const tooFew = [
        [7, 45],
        [7.1, 45],
        [7, 45],
      ];
      const short = await call('/locations', {
        method: 'POST',
        body: { ...meadow, boundary: { type: 'Polygon', coordinates: [tooFew] } },
      });
      expect(short.status).to.equal(400);
      expect(short.body.errors[0].message).to.match(/at least 4/);
      const notPolygon = await call('/locations', {
        method: 'POST',
        body: { ...meadow, boundary: { type: 'Point', coordinates: [7, 45] } },
      });
      expect(notPolygon.status).to.equal(400);
      expect(await server.stores.eventStore.headPosition()).to.equal(head);
    });
  });

  describe('observations that name a location or a visit', () => {
    it('are refused with 422 naming the field when the location does not exist or was deleted', async () => {
      const head = await server.stores.eventStore.headPosition();
      const unknown = await call('/observations', {
        method: 'POST',
        body: { observedAt: '2026-05-01T09:00:00Z', locationId: 'l_nothing' },
      });
      expect(unknown.status).to.equal(422);
      expect(unknown.headers.get('content-type')).to.match(/problem\+json/);
      expect(unknown.body.errors).to.deep.equal([
        { path: 'locationId', message: 'names no location of this tenant' },
      ]);
      expect(await server.stores.eventStore.headPosition()).to.equal(head);

      const location = (await createLocation()).body.id;
      const ok = await call('/observations', {
        method: 'POST',
        body: { observedAt: '2026-05-01T09:00:00Z', locationId: location },
      });
      expect(ok.status).to.equal(201);
      await call(`/locations/${location}`, { method: 'DELETE' });
      const gone = await call(`/observations/${ok.body.id}`, {
        method: 'PATCH',
        body: { locationId: location },
      });
      expect(gone.status).to.equal(422); // a reference sent is checked, even when it is the stored value
      const other = await call('/observations', {
        method: 'POST',
        body: { observedAt: '2026-05-01T09:00:00Z', locationId: location },
      });
      expect(other.status).to.equal(422);
    });

    it('are refused with 422 for an unknown visit and 409 for a submitted one', async () => {
      const unknown = await call('/observations', {
        method: 'POST',
        body: { observedAt: '2026-05-01T09:00:00Z', visitId: 'v_nothing' },
      });
      expect(unknown.status).to.equal(422);
      expect(unknown.body.errors[0].path).to.equal('visitId');
    });
  });

  describe('field visits', () => {
    const createVisit = async (body: object) => {
      const response = await call('/visits', { method: 'POST', body });
      expect(response.status, JSON.stringify(response.body)).to.equal(201);
      return response.body as { id: string; status: string };
    };

    it('are created as drafts, patched, and submitted with the ids of their observations', async () => {
      const location = (await createLocation()).body.id;
      const visit = await createVisit({
        locationId: location,
        startedAt: '2026-05-01T08:00:00Z',
        participants: ['Ada'],
        notes: 'dawn survey',
      });
      expect(visit).to.deep.include({
        status: 'draft',
        locationId: location,
        endedAt: null,
        participants: ['Ada'],
        observationIds: [],
      });
      const patched = await call(`/visits/${visit.id}`, {
        method: 'PATCH',
        body: { endedAt: '2026-05-01T10:00:00Z', participants: ['Ada', 'Grace'] },
      });
      expect(patched.body).to.deep.include({
        endedAt: '2026-05-01T10:00:00.000Z',
        participants: ['Ada', 'Grace'],
        version: 1,
      });

      const joined = [];
      for (const minute of [10, 20]) {
        const observation = await call('/observations', {
          method: 'POST',
          body: { observedAt: `2026-05-01T08:${minute}:00Z`, visitId: visit.id },
        });
        joined.push(observation.body.id as string);
      }
      await call('/observations', { method: 'POST', body: { observedAt: '2026-05-01T08:30:00Z' } });

      const submitted = await call(`/visits/${visit.id}/submit`, { method: 'POST' });
      expect(submitted.status).to.equal(200);
      expect(submitted.body).to.deep.include({ status: 'submitted', observationIds: joined });
      expect(submitted.body.submittedAt).to.be.a('string');
    });

    it('are immutable once submitted: an edit, a second submit or a new observation gets 409', async () => {
      const location = (await createLocation()).body.id;
      const visit = await createVisit({ locationId: location, startedAt: '2026-05-01T08:00:00Z' });
      expect((await call(`/visits/${visit.id}/submit`, { method: 'POST' })).status).to.equal(200);
      const head = await server.stores.eventStore.headPosition();
      expect(
        (await call(`/visits/${visit.id}`, { method: 'PATCH', body: { notes: 'late' } })).status,
      ).to.equal(409);
      expect((await call(`/visits/${visit.id}/submit`, { method: 'POST' })).status).to.equal(409);
      const late = await call('/observations', {
        method: 'POST',
        body: { observedAt: '2026-05-01T09:00:00Z', visitId: visit.id },
      });
      expect(late.status).to.equal(409);
      expect(await server.stores.eventStore.headPosition()).to.equal(head);
    });

    it('refuse an end before the start, and an unknown location', async () => {
      const location = (await createLocation()).body.id;
      const backwards = await call('/visits', {
        method: 'POST',
        body: { locationId: location, startedAt: '2026-05-01T08:00:00Z', endedAt: '2026-05-01T07:00:00Z' },
      });
      expect(backwards.status).to.equal(400);
      expect(backwards.body.errors[0].path).to.equal('endedAt');
      const visit = await createVisit({ locationId: location, startedAt: '2026-05-01T08:00:00Z' });
      const patched = await call(`/visits/${visit.id}`, {
        method: 'PATCH',
        body: { endedAt: '2026-04-30T08:00:00Z' },
      });
      expect(patched.status).to.equal(400);
      const nowhere = await call('/visits', {
        method: 'POST',
        body: { locationId: 'l_nowhere', startedAt: '2026-05-01T08:00:00Z' },
      });
      expect(nowhere.status).to.equal(422);
    });

    it('list by location, status and start time', async () => {
      const [north, south] = [
        (await createLocation()).body.id as string,
        (await createLocation({ ...meadow, name: 'South' })).body.id as string,
      ];
      const early = await createVisit({ locationId: north, startedAt: '2026-05-01T06:00:00Z' });
      const late = await createVisit({ locationId: north, startedAt: '2026-05-02T06:00:00Z' });
      const elsewhere = await createVisit({ locationId: south, startedAt: '2026-05-03T06:00:00Z' });
      await call(`/visits/${late.id}/submit`, { method: 'POST' });
      expect(await listIds('/visits')).to.deep.equal([elsewhere.id, late.id, early.id]);
      expect(await listIds(`/visits?locationId=${north}`)).to.deep.equal([late.id, early.id]);
      expect(await listIds('/visits?status=submitted')).to.deep.equal([late.id]);
      expect(
        await listIds('/visits?startedFrom=2026-05-02T00:00:00Z&startedTo=2026-05-02T23:59:59Z'),
      ).to.deep.equal([late.id]);
    });
  });

  describe('when a visit is submitted', () => {
    let receiver: Server;
    const received: { body: string; signature: string }[] = [];
    before(async () => {
      receiver = createServer((req, res) => {
        const chunks: Buffer[] = [];
        req.on('data', (chunk: Buffer) => chunks.push(chunk));
        req.on('end', () => {
          received.push({
            body: Buffer.concat(chunks).toString(),
            signature: String(req.headers['x-service-signature']),
          });
          res.writeHead(204).end();
        });
      });
      await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
    });
    after(async () => new Promise<void>((resolve) => receiver.close(() => resolve())));

    it('delivers visit.submitted with the visit and its observations to subscribed receivers', async () => {
      const secret = 'visits-secret-0123456789';
      const { port } = receiver.address() as AddressInfo;
      const subscribed = await call('/webhooks', {
        method: 'POST',
        body: { url: `http://127.0.0.1:${port}/hooks`, events: ['visit.submitted'], secret },
      });
      expect(subscribed.status).to.equal(201);
      const location = (await createLocation()).body.id;
      const visit = (
        await call('/visits', {
          method: 'POST',
          body: { locationId: location, startedAt: '2026-05-01T08:00:00Z', participants: ['Ada'] },
        })
      ).body;
      const observation = (
        await call('/observations', {
          method: 'POST',
          body: { observedAt: '2026-05-01T08:10:00Z', visitId: visit.id },
        })
      ).body;
      const submitted = (await call(`/visits/${visit.id}/submit`, { method: 'POST' })).body;

      await eventually(() => received.length === 1, 5000);
      const [delivery] = received;
      expect(verifyServiceSignature(delivery!.body, delivery!.signature, secret)).to.equal(true);
      const envelope = JSON.parse(delivery!.body);
      expect(envelope).to.deep.include({ type: 'visit.submitted', tenantId });
      expect(envelope.data).to.deep.equal({
        visitId: visit.id,
        locationId: location,
        startedAt: '2026-05-01T08:00:00.000Z',
        endedAt: null,
        participants: ['Ada'],
        notes: null,
        observationIds: [observation.id],
        status: 'submitted',
        submittedAt: submitted.submittedAt,
      });
    });
  });
});
