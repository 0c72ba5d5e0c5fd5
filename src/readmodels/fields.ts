import type { FieldSpec, ListQuery } from './port.js';

// How projections (projections/) declare the fields their queries use, and read a `sort` parameter.

/** Fields stored under their own name as text, queried by that name: `textFields('status', 'createdAt')`. */
export const textFields = <const Name extends string>(...names: Name[]): Record<Name, FieldSpec> => {
  const field = (name: Name): [Name, FieldSpec] => [name, { path: name, type: 'text' }];
  return Object.fromEntries(names.map(field)) as Record<Name, FieldSpec>;
};

/** A point's latitude and longitude, stored under `position`, queried as `lat` and `lon` (a `bbox` filter). */
export const positionFields = {
  lat: { path: 'position.lat', type: 'number' },
  lon: { path: 'position.lon', type: 'number' },
} as const satisfies Record<string, FieldSpec>;

/** A list's `sort` parameter: a field's name, descending when it starts with `-` (`-createdAt`). */
export const sortBy = (sort: string): ListQuery['sort'] => ({
  field: sort.replace(/^-/, ''),
  direction: sort.startsWith('-') ? 'desc' : 'asc',
});
