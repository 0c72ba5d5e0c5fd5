import type * as t from 'io-ts';
import type { DomainEvent } from '../core/decider.js';
import { ValidationError } from '../core/errors.js';
import { boundsProblem } from '../core/json-bounds.js';
import type {
  GeoPositionCodec,
  ObservationCodec,
  ObservationFields,
  ObservationMediaCodec,
} from './codecs.js';

export type GeoPosition = t.TypeOf<typeof GeoPositionCodec>;

export type Attributes = Record<string, unknown>;

/** The resource as clients see it, and the document the observations read model stores (./codecs.ts). */
export type Observation = t.TypeOf<typeof ObservationCodec>;

/**
 * An attached image: stored once by its SHA-256 in the blob store, described here. Its id is `m_` and the
 * first 26 hex digits of the SHA-256: the same image attached twice is one medium.
 */
export type ObservationMedia = t.TypeOf<typeof ObservationMediaCodec>;

export type MediaContentType = ObservationMedia['contentType'];

export type { ObservationFields };

export type ObservationRecorded = DomainEvent<
  'ObservationRecorded',
  { observationId: string } & ObservationFields
>;

/** `changes` holds the new value of every field that changed; attributes are stored whole, after merging. */
export type ObservationUpdated = DomainEvent<
  'ObservationUpdated',
  { observationId: string; changes: Partial<ObservationFields> }
>;

export type ObservationMediaAttached = DomainEvent<
  'ObservationMediaAttached',
  { observationId: string; media: Omit<ObservationMedia, 'addedAt'> }
>;

export type ObservationEvent = ObservationRecorded | ObservationUpdated | ObservationMediaAttached;

export const observationEventTypes: readonly ObservationEvent['type'][] = [
  'ObservationRecorded',
  'ObservationUpdated',
  'ObservationMediaAttached',
];

export type ObservationState = { status: 'absent' } | { status: 'recorded'; observation: Observation };

/** A merge patch (RFC 7396): present fields replace, null clears, attributes merge key by key. */
export type ObservationPatch = Partial<Omit<ObservationFields, 'observedAt'>> & { observedAt?: string };

export type ObservationCommand =
  | { type: 'RecordObservation'; tenantId: string; observationId: string; fields: ObservationFields }
  | { type: 'UpdateObservation'; patch: ObservationPatch }
  | { type: 'AttachMedia'; media: Omit<ObservationMedia, 'addedAt'> };

/** Attributes are free-form but bounded, so one observation cannot bloat every list page. */
export const maxAttributesBytes = 16 * 1024;

/** Refuses attributes past their bounds: an observation's or a location's, as recorded or after a merge. */
export const assertAttributesFit = (attributes: Attributes): void => {
  // The codec bounded each request's attributes; a merge can still add up to more keys than the bounds allow.
  const problem = boundsProblem(attributes);
  if (problem !== undefined) throw new ValidationError([{ path: 'attributes', message: problem }]);
  const size = Buffer.byteLength(JSON.stringify(attributes));
  if (size > maxAttributesBytes) {
    throw new ValidationError([
      { path: 'attributes', message: `must serialize to at most ${maxAttributesBytes} bytes (is ${size})` },
    ]);
  }
};
