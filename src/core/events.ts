/** The envelope every domain event travels in, on every event store adapter. */

export interface EventMetadata {
  tenantId: string;
  /** The credential that caused the event, e.g. `apikey:k_123` or `system:cv-worker`. */
  actor: string;
  correlationId: string;
  /** Id of the event or request that caused this one; null for a request with no parent. */
  causationId: string | null;
  /** ISO 8601 UTC time the fact happened, taken from the injected clock. */
  occurredAt: string;
  schemaVersion: number;
  /**
   * W3C traceparent of the span that wrote the event, when traces were on: consumers continue that trace,
   * in this process or another. Absent on events written without tracing, and on every older event.
   */
  traceparent?: string;
  /**
   * The random salt of each secret field of the data (src/core/secret-fields.ts), by field name: the hash
   * covers a salted digest of such a field, not its value (src/eventstore/hash-chain.ts), so an export can
   * leave the value out and still be verified. Set by the event store on append; never exported.
   */
  salts?: Record<string, string>;
}

/**
 * Metadata as a writer gives it. The schema version is the store's to stamp, from the schema histories it
 * was opened with (src/eventstore/upcasting.ts); a writer sets one only to write an older shape on purpose.
 */
export type NewEventMetadata = Omit<EventMetadata, 'schemaVersion'> & { schemaVersion?: number };

export interface NewEvent<Type extends string = string, Data = unknown> {
  id: string;
  type: Type;
  data: Data;
  metadata: NewEventMetadata;
}

export interface RecordedEvent<Type extends string = string, Data = unknown> extends NewEvent<Type, Data> {
  metadata: EventMetadata;
  streamName: string;
  /** 0-based version of the event inside its stream. */
  streamVersion: number;
  /** Global, strictly increasing position in the store's commit order. */
  position: number;
  /** SHA-256 chaining the event to the previous one of its stream (src/eventstore/hash-chain.ts). */
  hash?: string;
}

/** A stream's version is the version of its last event; -1 means the stream does not exist yet. */
export const NO_STREAM = -1;

export type ExpectedVersion = number | 'any' | 'no_stream' | 'stream_exists';

/** Whether a stream at `current` (NO_STREAM when it has no events) may take an append expecting `expected`. */
export const satisfiesExpected = (expected: ExpectedVersion, current: number): boolean => {
  switch (expected) {
    case 'any':
      return true;
    case 'no_stream':
      return current === NO_STREAM;
    case 'stream_exists':
      return current !== NO_STREAM;
    default:
      return expected === current;
  }
};
