import type { Attributes, GeoPosition } from './observation.js';

/**
 * The schema history of the observation events. Only types: this module is imported by the event stores'
 * read path (through src/core/upcasting.ts), so it must stay free of anything that imports a store.
 */

/**
 * `ObservationRecorded` version 1, as the first releases wrote it: optional fields were left out instead
 * of being null, and there were no attributes.
 */
export interface ObservationRecordedV1 {
  observationId: string;
  observedAt: string;
  position?: GeoPosition;
  locationId?: string;
  visitId?: string;
  notes?: string;
}

/**
 * `ObservationRecorded` version 2, spelled out rather than taken from the current type: what an upcaster
 * returns never changes, so a field added later must not change the type of this one.
 */
export interface ObservationRecordedV2 {
  observationId: string;
  observedAt: string;
  position: GeoPosition | null;
  locationId: string | null;
  visitId: string | null;
  notes: string | null;
  attributes: Attributes;
}

type V2 = ObservationRecordedV2;

/**
 * v1 -> v2: absent optional fields become null and attributes `{}`. Values that are there are kept, so
 * the upcaster is also right for data that already has the v2 shape: events written at version 1 after
 * the fields existed (every event stored before versions were counted says 1) read unchanged.
 */
export const observationRecordedV1ToV2 = (data: unknown): V2 => {
  const { observationId, observedAt, position, locationId, visitId, notes, attributes, ...rest } =
    data as ObservationRecordedV1 & Partial<V2>;
  return {
    observationId,
    observedAt,
    position: position ?? null,
    locationId: locationId ?? null,
    visitId: visitId ?? null,
    notes: notes ?? null,
    attributes: attributes ?? {},
    ...rest,
  };
};

/** The current version of each observation event type with a history, and how to read older ones. */
export const observationEventSchemas = {
  ObservationRecorded: { current: 2, upcasters: { 1: observationRecordedV1ToV2 } },
} as const;
