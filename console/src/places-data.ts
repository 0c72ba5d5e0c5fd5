// Locations and visits as the console reads them, and their names for the observation screens: one list
// request per screen (not one per row), so that a page of observations names its places at a bounded cost.
import type { Polygon } from 'geojson';
import type { visitStatuses } from '../../client/src/lists.gen.js';
import { getJson, query, tenantPath, type Page } from './api.js';
import { useLoad } from './ui.js';

export interface Location {
  id: string;
  name: string;
  position: { lat: number; lon: number };
  boundary: Polygon | null;
}

export interface Visit {
  id: string;
  locationId: string;
  startedAt: string;
  endedAt: string | null;
  participants: string[];
  notes: string | null;
  status: (typeof visitStatuses)[number];
  observationIds: string[];
  submittedAt: string | null;
  version: number;
}

/** The most the filters offer by name; past it, a place is shown by its id. */
export const namedPlacesLimit = 200;

const none = <T>(): Promise<Page<T>> => Promise.resolve({ data: [], nextCursor: null });

/** The tenant's locations, when the credential may read them (locations:read), else none. */
export const useLocations = (allowed: boolean) =>
  useLoad(
    () =>
      allowed
        ? getJson<Page<Location>>(tenantPath(`/locations${query({ limit: namedPlacesLimit })}`))
        : none<Location>(),
    [allowed],
  );

/** The tenant's latest visits, when asked for. */
export const useVisits = (allowed: boolean, locationId?: string) =>
  useLoad(
    () =>
      allowed
        ? getJson<Page<Visit>>(tenantPath(`/visits${query({ locationId, limit: namedPlacesLimit })}`))
        : none<Visit>(),
    [allowed, locationId],
  );

/** Id → name. */
export const namesOf = (locations: readonly Location[]): ReadonlyMap<string, string> =>
  new Map(locations.map((l) => [l.id, l.name]));

/** A visit as its choice in a filter reads: "Ridge, 1 May 2026". */
export const visitLabel = (visit: Visit, names: ReadonlyMap<string, string>): string =>
  `${names.get(visit.locationId) ?? visit.locationId}, ${new Date(visit.startedAt).toLocaleDateString()}`;
