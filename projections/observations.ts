import type { CvJobCompleted } from '../src/cv/decider.js';
import type { RecordedEvent } from '../src/core/events.js';
import { observationDecider } from '../src/observations/decider.js';
import type { Observation, ObservationState } from '../src/observations/observation.js';
import { observationEventTypes } from '../src/observations/observation.js';
import type { BoundingBox, Filter, ListQuery } from '../src/readmodels/port.js';
import type { Projection } from '../src/readmodels/projection.js';
import { aggregateProjection } from '../src/readmodels/aggregate-projection.js';
import { positionFields, sortBy, textFields } from '../src/readmodels/fields.js';

/**
 * The observations list. Each document is the observation resource itself, folded with the aggregate's own
 * evolve, so the list and a single read can never disagree on what an event means.
 */
const resourceProjection: Projection<Observation> = aggregateProjection({
  name: 'observations',
  collection: {
    name: 'observations',
    fields: {
      ...textFields('observedAt', 'updatedAt', 'createdAt', 'locationId', 'visitId'),
      ...positionFields,
    },
    indexes: [
      ['observedAt'],
      ['updatedAt'],
      ['createdAt'],
      ['locationId', 'observedAt'],
      ['visitId', 'observedAt'],
      ['lat', 'lon'],
    ],
  },
  decider: observationDecider,
  eventTypes: observationEventTypes,
  // The first event of every observation stream: the fold starts the document afresh.
  creates: ['ObservationRecorded'],
  key: (event) => ({ tenantId: event.metadata.tenantId, id: event.data.observationId }),
  toState: (doc: Observation | null): ObservationState =>
    doc ? { status: 'recorded', observation: doc } : { status: 'absent' },
  toDoc: (state) => (state.status === 'recorded' ? state.observation : null),
});

type LatestDetections = NonNullable<Observation['latestDetections']>;

/** A model's labels are its own: bounded here as the resource's schema bounds them. */
const maxLabels = 20;
const maxLabelLength = 200;

/** The detections counted by label, most first, then by name. */
export const labelCounts = (detections: readonly { label: string }[]): LatestDetections['labels'] => {
  const counts = new Map<string, number>();
  for (const { label } of detections) {
    const bounded = label.slice(0, maxLabelLength) || '?';
    counts.set(bounded, (counts.get(bounded) ?? 0) + 1);
  }
  return [...counts]
    .sort(([a, m], [b, n]) => n - m || a.localeCompare(b))
    .slice(0, maxLabels)
    .map(([label, count]) => ({ label, count }));
};

/**
 * A completed job that found something becomes the observation's `latestDetections`. One that found
 * nothing (an image-quality job never does) leaves the last finding in place: the list says what was seen.
 */
const withDetections = (doc: Observation | null, event: RecordedEvent): Observation | null => {
  const { data, metadata } = event as RecordedEvent<'CvJobCompleted', CvJobCompleted['data']>;
  if (!doc || data.result.detections.length === 0) return doc;
  return {
    ...doc,
    latestDetections: {
      jobId: data.jobId,
      model: data.model,
      finishedAt: metadata.occurredAt,
      labels: labelCounts(data.result.detections),
    },
  };
};

/**
 * The list's documents: the resource, plus what the latest CV job saw, from the job's own stream. The
 * resource's fold drops fields it does not know, so `latestDetections` is carried across its events.
 */
export const observationsProjection: Projection<Observation> = {
  ...resourceProjection,
  eventTypes: [...observationEventTypes, 'CvJobCompleted'],
  documentKey: (event) =>
    event.type === 'CvJobCompleted'
      ? { tenantId: event.metadata.tenantId, id: (event.data as CvJobCompleted['data']).observationId }
      : resourceProjection.documentKey(event),
  evolve: (doc, event) => {
    if (event.type === 'CvJobCompleted') return withDetections(doc, event);
    const next = resourceProjection.evolve(doc, event);
    const latestDetections = doc?.latestDetections;
    return next && latestDetections ? { ...next, latestDetections } : next;
  },
};

/** The list query for the observations endpoint's already-validated parameters. */
export const observationsQuery = (
  tenantId: string,
  params: {
    observedFrom?: string;
    observedTo?: string;
    updatedSince?: string;
    locationId?: string;
    visitId?: string;
    bbox?: BoundingBox;
    sort?: string;
  },
): Omit<ListQuery, 'limit' | 'after'> => {
  const filters: Filter[] = [];
  if (params.observedFrom) filters.push({ op: 'gte', field: 'observedAt', value: params.observedFrom });
  if (params.observedTo) filters.push({ op: 'lte', field: 'observedAt', value: params.observedTo });
  if (params.updatedSince) filters.push({ op: 'gte', field: 'updatedAt', value: params.updatedSince });
  if (params.locationId) filters.push({ op: 'eq', field: 'locationId', value: params.locationId });
  if (params.visitId) filters.push({ op: 'eq', field: 'visitId', value: params.visitId });
  if (params.bbox) filters.push({ op: 'bbox', latField: 'lat', lonField: 'lon', box: params.bbox });
  return { tenantId, filters, sort: sortBy(params.sort ?? '-observedAt') };
};
