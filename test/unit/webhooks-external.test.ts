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

  const cvJob = { jobId: 'j_1', observationId: 'o_1', model: 'object-proposals', attempt: 2 };
  const result = {
    detections: [
      { label: 'dark-object', confidence: 0.8, bbox: { x: 0.1, y: 0.2, width: 0.3, height: 0.4 }, fill: 1 },
    ],
    summary: { objects: 1 },
  };

  it('maps CvJobCompleted to cv.job.completed with exactly jobId, observationId, model, status and result', () => {
    expect(toExternal(recorded('CvJobCompleted', { ...cvJob, result }, 2))).to.deep.equal([
      {
        id: 'evt_0a1b2c3d-0000-4000-8000-000000000001',
        type: 'cv.job.completed',
        tenantId: 't_1',
        timestamp: '2026-05-01T07:30:00.000Z',
        data: { jobId: 'j_1', observationId: 'o_1', model: 'object-proposals', status: 'completed', result },
      },
    ]);
  });

  it('maps CvJobFailed to cv.job.failed with exactly jobId, observationId, model, status and error', () => {
    const error = { code: 'timeout', message: 'The job did not finish within 60000 ms' };
    expect(toExternal(recorded('CvJobFailed', { ...cvJob, error }, 2))).to.deep.equal([
      {
        id: 'evt_0a1b2c3d-0000-4000-8000-000000000001',
        type: 'cv.job.failed',
        tenantId: 't_1',
        timestamp: '2026-05-01T07:30:00.000Z',
        data: { jobId: 'j_1', observationId: 'o_1', model: 'object-proposals', status: 'failed', error },
      },
    ]);
  });

  it('maps the other CV job events to nothing', () => {
    expect(toExternal(recorded('CvJobRequested', { ...cvJob, mediaId: 'm_1', sha256: 'ab' }))).to.deep.equal(
      [],
    );
    expect(toExternal(recorded('CvJobStarted', { jobId: 'j_1', attempt: 1, startedBy: 'x' }))).to.deep.equal(
      [],
    );
  });

  it('maps every other domain event to nothing', () => {
    for (const type of ['TenantCreated', 'WebhookSubscribed', 'DeliveryAttempted', 'ApiKeyCreated']) {
      expect(toExternal(recorded(type, {})), type).to.deep.equal([]);
    }
  });

  it('reads exactly the domain event types the projector subscribes to, and speaks only the public vocabulary', () => {
    expect([...mappedDomainEventTypes].sort()).to.deep.equal([
      'CvJobCompleted',
      'CvJobFailed',
      'ObservationMediaAttached',
      'ObservationRecorded',
      'ObservationUpdated',
      'VisitSubmitted',
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
