import { isDeepStrictEqual } from 'node:util';
import type { Decider, DomainEvent } from '../core/decider.js';
import { changeStamps, createdFrom, creationStamps } from '../core/decider.js';
import { ConflictError, NotFoundError } from '../core/errors.js';
import { mergePatch } from '../core/merge-patch.js';
import type { Attributes } from '../observations/observation.js';
import { assertAttributesFit } from '../observations/observation.js';

/** A GeoJSON Polygon (RFC 7946 §3.1.6): an outer ring and optional holes of [lon, lat] positions. */
export interface Polygon {
  type: 'Polygon';
  coordinates: [number, number][][];
}

export interface Location {
  id: string;
  tenantId: string;
  name: string;
  position: { lat: number; lon: number };
  boundary: Polygon | null;
  attributes: Attributes;
  createdAt: string;
  updatedAt: string;
  version: number;
}

export type LocationFields = Pick<Location, 'name' | 'position' | 'boundary' | 'attributes'>;

export type LocationEvent =
  | DomainEvent<'LocationCreated', { locationId: string } & LocationFields>
  | DomainEvent<'LocationUpdated', { locationId: string; changes: Partial<LocationFields> }>
  | DomainEvent<'LocationDeleted', { locationId: string }>;

export const locationEventTypes: readonly LocationEvent['type'][] = [
  'LocationCreated',
  'LocationUpdated',
  'LocationDeleted',
];

export type LocationState =
  { status: 'absent' } | { status: 'active'; location: Location } | { status: 'deleted'; location: Location };

export type LocationPatch = Partial<Omit<LocationFields, 'attributes'>> & { attributes?: Attributes };

export type LocationCommand =
  | { type: 'CreateLocation'; locationId: string; fields: LocationFields }
  | { type: 'UpdateLocation'; patch: LocationPatch }
  | { type: 'DeleteLocation' };

/** The location a state holds, or a 404: a deleted one is gone for reads and commands alike. */
export const locationOf = (state: LocationState): Location => {
  if (state.status !== 'active') throw new NotFoundError('The location does not exist');
  return state.location;
};

export const locationDecider: Decider<LocationState, LocationCommand, LocationEvent> = {
  aggregate: 'location',
  initialState: () => ({ status: 'absent' }),
  decide: (command, state) => {
    switch (command.type) {
      case 'CreateLocation':
        if (state.status !== 'absent')
          throw new ConflictError(`Location ${command.locationId} already exists`);
        assertAttributesFit(command.fields.attributes);
        return [{ type: 'LocationCreated', data: { locationId: command.locationId, ...command.fields } }];
      case 'UpdateLocation': {
        const location = locationOf(state);
        const next: Partial<LocationFields> = { ...command.patch };
        if (command.patch.attributes !== undefined) {
          next.attributes = mergePatch(location.attributes, command.patch.attributes) as Attributes;
          assertAttributesFit(next.attributes);
        }
        const changes = Object.fromEntries(
          Object.entries(next).filter(
            ([field, value]) => !isDeepStrictEqual(location[field as keyof Location], value),
          ),
        );
        return Object.keys(changes).length === 0
          ? []
          : [{ type: 'LocationUpdated', data: { locationId: location.id, changes } }];
      }
      case 'DeleteLocation':
        return [{ type: 'LocationDeleted', data: { locationId: locationOf(state).id } }];
    }
  },
  evolve: (state, event) => {
    switch (event.type) {
      case 'LocationCreated': {
        return {
          status: 'active',
          location: {
            ...createdFrom(event, 'locationId'),
            ...creationStamps(event),
          },
        };
      }
      case 'LocationUpdated':
        if (state.status !== 'active') return state;
        return {
          status: 'active',
          location: { ...state.location, ...event.data.changes, ...changeStamps(event) },
        };
      case 'LocationDeleted':
        if (state.status === 'absent') return state;
        return { status: 'deleted', location: { ...state.location, ...changeStamps(event) } };
    }
  },
};
