import type { RecordedEvent } from '../core/events.js';
import type { ObservationEvent } from '../observations/observation.js';
import type { VisitEvent } from '../visits/decider.js';
import type { CvJobCompleted, CvJobFailed } from '../cv/decider.js';

type VisitSubmittedData = Extract<VisitEvent, { type: 'VisitSubmitted' }>['data'];

/**
 * The stable vocabulary tenants' systems receive. It changes only by addition; the domain's event names
 * and shapes may change underneath, because one pure function maps them.
 */
export const externalEventTypes = [
  'observation.created',
  'observation.updated',
  'cv.job.completed',
  'cv.job.failed',
  'visit.submitted',
] as const;

export type ExternalEventType = (typeof externalEventTypes)[number];

export interface ExternalEvent {
  /** Derived from the domain event's id: the same on every attempt and redelivery, for deduplication. */
  id: string;
  type: ExternalEventType;
  tenantId: string;
  /** When the domain fact happened, ISO 8601 UTC. */
  timestamp: string;
  data: Record<string, unknown>;
}

/** The domain event types the mapping reads: what the webhook projector's consumer group subscribes to. */
export const mappedDomainEventTypes: readonly string[] = [
  'ObservationRecorded',
  'ObservationUpdated',
  'ObservationMediaAttached',
  'VisitSubmitted',
  'CvJobCompleted',
  'CvJobFailed',
];

const envelope = (
  event: RecordedEvent,
  type: ExternalEventType,
  data: Record<string, unknown>,
): ExternalEvent => ({
  id: `evt_${event.id}`,
  type,
  tenantId: event.metadata.tenantId,
  timestamp: event.metadata.occurredAt,
  data,
});

/** `visit.submitted` carries the visit as submitted, with the ids of the observations that belong to it. */
const visitSubmitted = (event: RecordedEvent): ExternalEvent[] => {
  if (event.type !== 'VisitSubmitted') return [];
  const { visitId, ...visit } = (event as RecordedEvent<'VisitSubmitted', VisitSubmittedData>).data;
  return [
    envelope(event, 'visit.submitted', {
      visitId,
      ...visit,
      status: 'submitted',
      submittedAt: event.metadata.occurredAt,
    }),
  ];
};

/**
 * A CV job's outcome: `cv.job.completed` with `{jobId, observationId, model, status, result}`, or
 * `cv.job.failed` with `{jobId, observationId, model, status, error}`; never the attempt count.
 */
const cvJobFinished = (event: RecordedEvent): ExternalEvent[] => {
  /** The job an outcome is of: the same three fields in both events. */
  const jobOf = ({ jobId, observationId, model }: CvJobCompleted['data'] | CvJobFailed['data']) => ({
    jobId,
    observationId,
    model,
  });
  if (event.type === 'CvJobCompleted') {
    const data = (event as RecordedEvent<'CvJobCompleted', CvJobCompleted['data']>).data;
    const { detections, summary } = data.result;
    return [
      envelope(event, 'cv.job.completed', {
        ...jobOf(data),
        status: 'completed',
        result: { detections, summary },
      }),
    ];
  }
  if (event.type === 'CvJobFailed') {
    const data = (event as RecordedEvent<'CvJobFailed', CvJobFailed['data']>).data;
    const { code, message } = data.error;
    return [envelope(event, 'cv.job.failed', { ...jobOf(data), status: 'failed', error: { code, message } })];
  }
  return [];
};

/** Domain event -> the external events it means (none for most events). Pure. */
export const toExternal = (event: RecordedEvent): ExternalEvent[] => {
  const domain = { type: event.type, data: event.data } as ObservationEvent;
  switch (domain.type) {
    case 'ObservationRecorded': {
      const { observationId, ...fields } = domain.data;
      return [
        envelope(event, 'observation.created', { observationId, ...fields, version: event.streamVersion }),
      ];
    }
    case 'ObservationUpdated':
      return [
        envelope(event, 'observation.updated', {
          observationId: domain.data.observationId,
          changes: domain.data.changes,
          version: event.streamVersion,
        }),
      ];
    case 'ObservationMediaAttached':
      return [
        envelope(event, 'observation.updated', {
          observationId: domain.data.observationId,
          changes: {},
          mediaAdded: { ...domain.data.media, addedAt: event.metadata.occurredAt },
          version: event.streamVersion,
        }),
      ];
    default:
      return [...visitSubmitted(event), ...cvJobFinished(event)];
  }
};
