import type { RecordedEvent } from '../core/events.js';
import type { CollectionSpec, DocumentKey } from './port.js';

/**
 * A read model, written once for every adapter: which events it reads, which document each event
 * touches, and a pure fold from (document | null, event) to document | null (null deletes).
 */
export interface Projection<D> {
  name: string;
  collection: CollectionSpec;
  /** The event types it reads; 'all' for every event (the stream heads of the audit digests). */
  eventTypes: readonly string[] | 'all';
  documentKey(event: RecordedEvent): DocumentKey | null;
  evolve(doc: D | null, event: RecordedEvent): D | null;
}
