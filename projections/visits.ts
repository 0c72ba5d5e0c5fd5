import type { Filter, ListQuery } from '../src/readmodels/port.js';
import { aggregateProjection } from '../src/readmodels/aggregate-projection.js';
import type { Visit, VisitState } from '../src/visits/decider.js';
import { visitDecider, visitEventTypes } from '../src/visits/decider.js';
import { sortBy, textFields } from '../src/readmodels/fields.js';

/** Field visits, newest first by default, filtered by location, status and start time. */
export const visitsProjection = aggregateProjection({
  name: 'visits',
  collection: {
    name: 'visits',
    fields: textFields('locationId', 'status', 'startedAt', 'createdAt'),
    indexes: [['startedAt'], ['locationId', 'startedAt'], ['status', 'startedAt'], ['createdAt']],
  },
  decider: visitDecider,
  eventTypes: visitEventTypes,
  key: (event) => ({ tenantId: event.metadata.tenantId, id: event.data.visitId }),
  toState: (doc: Visit | null): VisitState =>
    doc ? { status: 'present', visit: doc } : { status: 'absent' },
  toDoc: (state) => (state.status === 'present' ? state.visit : null),
});

export const visitsQuery = (
  tenantId: string,
  params: { locationId?: string; status?: string; startedFrom?: string; startedTo?: string; sort?: string },
): Omit<ListQuery, 'limit' | 'after'> => {
  const filters: Filter[] = [];
  if (params.locationId) filters.push({ op: 'eq', field: 'locationId', value: params.locationId });
  if (params.status) filters.push({ op: 'eq', field: 'status', value: params.status });
  if (params.startedFrom) filters.push({ op: 'gte', field: 'startedAt', value: params.startedFrom });
  if (params.startedTo) filters.push({ op: 'lte', field: 'startedAt', value: params.startedTo });
  return {
    tenantId,
    filters,
    sort: sortBy(params.sort ?? '-startedAt'),
  };
};
