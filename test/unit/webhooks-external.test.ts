import { expect } from 'chai';
import type { RecordedEvent } from '../../src/core/events.js';
import { externalEventTypes, mappedDomainEventTypes, toExternal } from '../../src/webhooks/external.js';

const recorded = (type: string, data: unknown, streamVersion = 0): RecordedEvent => ({
  id: '0a1b2c3d-0000-4000-8000-000000000001',
  streamName: 'observation-t_1_o_1',
  streamVersion,
  position: 42,
  type,
  data,
  metadata: {
    tenantId: 't_1',
    actor: 'user:u_1',
    correlationId: 'c',
    causationId: null,
    occurredAt: '2026-05-01T07:30:00.000Z',
    schemaVersion: 1,
  },
});

const fields = {
  observedAt: '2026-05-01T07:30:00.000Z',
  position: { lat: 45, lon: 7 },
  locationId: null,
  visitId: null,
  notes: 'near the creek',
  attributes: { species: 'fox' },
};

describe('the mapping of domain events to external events', () => {
  it('maps ObservationRecorded to observation.created with the fields and the version', () => {
    expect(toExternal(recorded('ObservationRecorded', { observationId: 'o_1', ...fields }))).to.deep.equal([
      {
        id: 'evt_0a1b2c3d-0000-4000-8000-000000000001',
        type: 'observation.created',
        tenantId: 't_1',
        timestamp: '2026-05-01T07:30:00.000Z',
        data: { observationId: 'o_1', ...fields, version: 0 },
      },
    ]);
  });

  it('maps ObservationUpdated to observation.updated with the changes and the version', () => {
    const event = recorded(
      'ObservationUpdated',
      { observationId: 'o_1', changes: { notes: 'two foxes' } },
      3,
    );
    expect(toExternal(event)).to.deep.equal([
      {
        id: 'evt_0a1b2c3d-0000-4000-8000-000000000001',
        type: 'observation.updated',
        tenantId: 't_1',
        timestamp: '2026-05-01T07:30:00.000Z',
        data: { observationId: 'o_1', changes: { notes: 'two foxes' }, version: 3 },
      },
    ]);
  });

  it('derives the envelope id from the domain event: the same every time it is mapped', () => {
    const event = recorded('ObservationRecorded', { observationId: 'o_1', ...fields });
    expect(toExternal(event)[0]!.id).to.equal(toExternal(event)[0]!.id);
    expect(toExternal({ ...event, id: 'another' })[0]!.id).to.equal('evt_another');
  });

  it('maps every other domain event to nothing', () => {
    for (const type of ['TenantCreated', 'WebhookSubscribed', 'DeliveryAttempted', 'ApiKeyCreated']) {
      expect(toExternal(recorded(type, {})), type).to.deep.equal([]);
    }
  });

  it('reads exactly the domain event types the projector subscribes to, and speaks only the public vocabulary', () => {
    expect([...mappedDomainEventTypes].sort()).to.deep.equal([
      'ObservationMediaAttached',
      'ObservationRecorded',
      'ObservationUpdated',
    ]);
    expect(externalEventTypes).to.deep.equal([
      'observation.created',
      'observation.updated',
      'cv.job.completed',
      'cv.job.failed',
      'visit.submitted',
    ]);
  });
});
