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
export const observationsProjection: Projection<Observation> = aggregateProjection({
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
