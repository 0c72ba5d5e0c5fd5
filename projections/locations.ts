import type { Location, LocationState } from '../src/locations/decider.js';
import { locationDecider, locationEventTypes } from '../src/locations/decider.js';
import type { Filter, ListQuery } from '../src/readmodels/port.js';
import { aggregateProjection } from '../src/readmodels/aggregate-projection.js';
import type { BoundingBox } from '../src/readmodels/port.js';
import { positionFields, sortBy, textFields } from '../src/readmodels/fields.js';

/** The locations list: a deleted location's document is removed, so it is gone from every list. */
export const locationsProjection = aggregateProjection({
  name: 'locations',
  collection: {
    name: 'locations',
    fields: { ...textFields('name', 'createdAt', 'updatedAt'), ...positionFields },
    indexes: [['name'], ['createdAt'], ['updatedAt'], ['lat', 'lon']],
  },
  decider: locationDecider,
  eventTypes: locationEventTypes,
  key: (event) => ({ tenantId: event.metadata.tenantId, id: event.data.locationId }),
  toState: (doc: Location | null): LocationState =>
    doc ? { status: 'active', location: doc } : { status: 'absent' },
  toDoc: (state) => (state.status === 'active' ? state.location : null),
});

export const locationsQuery = (
  tenantId: string,
  params: { bbox?: BoundingBox; namePrefix?: string; sort?: string },
): Omit<ListQuery, 'limit' | 'after'> => {
  const filters: Filter[] = [];
  if (params.bbox) filters.push({ op: 'bbox', latField: 'lat', lonField: 'lon', box: params.bbox });
  if (params.namePrefix) filters.push({ op: 'prefix', field: 'name', value: params.namePrefix });
  return {
    tenantId,
    filters,
    sort: sortBy(params.sort ?? 'name'),
  };
};
