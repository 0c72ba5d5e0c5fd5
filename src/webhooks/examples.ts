import { randomUUID } from 'node:crypto';
import type { RecordedEvent } from '../core/events.js';
import { exampleObservationFields } from '../observations/codecs.js';
import { toExternal, type ExternalEvent, type ExternalEventType } from './external.js';

/**
 * Example events for `POST …/webhooks/{id}/test`. Each is a made-up domain event put through the same
 * mapping as real ones (external.ts), so a test delivery has exactly the shape of a real delivery of its
 * type. Its id starts `evt_test_`, so a receiver can tell it apart; its data names no real resource.
 */
const observationId = 'o_01m7xq3mn18snzhf2p99rppm8q';

const domainEvents: Record<
  ExternalEventType,
  { type: string; data: Record<string, unknown>; version: number }
> = {
  'observation.created': {
    type: 'ObservationRecorded',
    version: 0,
    data: { observationId, ...exampleObservationFields },
  },
  'observation.updated': {
    type: 'ObservationUpdated',
    version: 1,
    data: { observationId, changes: { notes: 'two foxes near the creek' } },
  },
  'cv.job.completed': {
    type: 'CvJobCompleted',
    version: 2,
    data: {
      jobId: 'j_01m7xq4a2b3c4d5e6f7g8h9j0k',
      observationId,
      model: 'objects-coco',
      attempt: 1,
      result: {
        // Boxes are fractions of the image's width and height, from its top left corner.
        detections: [
          { label: 'horse', confidence: 0.671, bbox: { x: 0.5605, y: 0.4095, width: 0.218, height: 0.2667 } },
          { label: 'horse', confidence: 0.58, bbox: { x: 0, y: 0.3673, width: 0.4044, height: 0.4386 } },
        ],
        summary: {
          counts: { horse: 2 },
          image: { width: 773, height: 512 },
          model: {
            name: 'centernet-mobilenetv3-coco',
            version: '@vladmandic/human 3.3.6 (weights sha256 1b635a150090)',
          },
          inferenceMs: 212,
          parameters: { minConfidence: 0.3, maxDetections: 100 },
        },
      },
    },
  },
  'cv.job.failed': {
    type: 'CvJobFailed',
    version: 2,
    data: {
      jobId: 'j_01m7xq4a2b3c4d5e6f7g8h9j0k',
      observationId,
      model: 'objects-coco',
      attempt: 3,
      error: { code: 'media_unreadable', message: 'The stored bytes are not an image that can be decoded' },
    },
  },
  'visit.submitted': {
    type: 'VisitSubmitted',
    version: 1,
    data: {
      visitId: 'v_01m7xq5b6c7d8e9f0g1h2j3k4m',
      observationIds: [observationId],
      locationId: 'l_01m7xq6c7d8e9f0g1h2j3k4m5n',
      startedAt: '2026-05-01T07:00:00.000Z',
      endedAt: '2026-05-01T09:00:00.000Z',
      participants: ['ada@acme.test'],
      notes: 'morning round',
    },
  },
};

/** A test event of this type for the tenant, stamped now. */
export const exampleEvent = (type: ExternalEventType, tenantId: string, now: Date): ExternalEvent => {
  const example = domainEvents[type];
  const recorded: RecordedEvent = {
    id: `test_${randomUUID().replaceAll('-', '')}`,
    type: example.type,
    data: example.data,
    metadata: {
      tenantId,
      actor: 'system:webhook-test',
      correlationId: randomUUID(),
      causationId: null,
      occurredAt: now.toISOString(),
      schemaVersion: 1,
    },
    streamName: `example-${tenantId}`,
    streamVersion: example.version,
    position: 0,
  };
  const [external] = toExternal(recorded).filter((candidate) => candidate.type === type);
  if (!external) throw new Error(`No example for ${type}`);
  return external;
};
