import type { RecordedEvent } from '../core/events.js';

/**
 * A row of an `events` table, the embedded store's or PostgreSQL's: their columns are the same. node-pg
 * hands a bigint position over as a string; the embedded store has no hash on events written before they
 * were chained, until it chains them on open.
 */
export interface EventRow<Position extends number | string = number> {
  position: Position;
  event_id: string;
  stream_name: string;
  stream_version: number;
  event_type: string;
  data: string;
  metadata: string;
  hash: string | null;
}

export const toRecordedEvent = (row: EventRow<number | string>): RecordedEvent => ({
  id: row.event_id,
  type: row.event_type,
  data: JSON.parse(row.data) as unknown,
  metadata: JSON.parse(row.metadata) as RecordedEvent['metadata'],
  streamName: row.stream_name,
  streamVersion: row.stream_version,
  position: Number(row.position),
  ...(row.hash ? { hash: row.hash } : {}),
});
