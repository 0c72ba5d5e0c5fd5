import type { Location, LocationState } from '../src/locations/decider.js';
import { locationDecider, locationEventTypes } from '../src/locations/decider.js';
import type { Filter, ListQuery } from '../src/readmodels/port.js';
import { aggregateProjection } from '../src/readmodels/aggregate-projection.js';
import type { BoundingBox } from '../src/readmodels/port.js';

/** The locations list: a deleted location's document is removed, so it is gone from every list. */
export const locationsProjection = aggregateProjection({
  name: 'locations',
  collection: {
    name: 'locations',
    fields: {
      name: { path: 'name', type: 'text' },
      createdAt: { path: 'createdAt', type: 'text' },
      updatedAt: { path: 'updatedAt', type: 'text' },
      lat: { path: 'position.lat', type: 'number' },
      lon: { path: 'position.lon', type: 'number' },
    },
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
  const sort = params.sort ?? 'name';
  return {
    tenantId,
    filters,
    sort: { field: sort.replace(/^-/, ''), direction: sort.startsWith('-') ? 'desc' : 'asc' },
  };
};
