import type { RecordedEvent } from '../core/events.js';

/** A row of the embedded store's `events` table. */
export interface EventRow {
  position: number;
  event_id: string;
  stream_name: string;
  stream_version: number;
  event_type: string;
  data: string;
  metadata: string;
  hash: string | null;
}

export const toRecordedEvent = (row: EventRow): RecordedEvent => ({
  id: row.event_id,
  type: row.event_type,
  data: JSON.parse(row.data) as unknown,
  metadata: JSON.parse(row.metadata) as RecordedEvent['metadata'],
  streamName: row.stream_name,
  streamVersion: row.stream_version,
  position: row.position,
  ...(row.hash ? { hash: row.hash } : {}),
});
