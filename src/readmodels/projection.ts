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
  /**
   * Event types that begin a document: their fold ignores the document before them (the first event of a
   * stream, such as ObservationRecorded). A batch whose first event for a document is one of these does not
   * read that document from the store first; a stored one that is newer still wins by its position. 'all'
   * when no fold looks at the document before (the stream heads: each event replaces its stream's head).
   */
  creates?: readonly string[] | 'all';
  documentKey(event: RecordedEvent): DocumentKey | null;
  evolve(doc: D | null, event: RecordedEvent): D | null;
}
