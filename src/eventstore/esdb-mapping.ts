import {
  ANY,
  NO_STREAM,
  START,
  STREAM_EXISTS,
  eventTypeFilter,
  excludeSystemEvents,
  streamNameFilter,
  type AppendExpectedRevision,
  type Filter,
  type ReadPosition,
  type RecordedEvent as EsdbEvent,
} from '@eventstore/db-client';
import { NO_STREAM as NO_STREAM_VERSION } from '../core/events.js';
import type { EventMetadata, ExpectedVersion, RecordedEvent } from '../core/events.js';
import type { EventFilter } from './port.js';

// How the EventStoreDB adapter (esdb.ts) maps filters, positions, revisions and events to the client's.

export const escapeRegex = (text: string): string => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/** Server events (`$>` links, subscription checkpoints, stream metadata) are never ours to deliver. */
export const isSystem = (event: RecordedEvent): boolean =>
  event.type.startsWith('$') || event.streamName.startsWith('$');

/** The whole port filter, applied client-side: the server can narrow by one criterion only. */
export const matches = (filter: EventFilter, event: RecordedEvent): boolean =>
  !isSystem(event) &&
  (filter.eventTypes === undefined || filter.eventTypes.includes(event.type)) &&
  (filter.streamPrefixes === undefined ||
    filter.streamPrefixes.some((prefix) => event.streamName.startsWith(prefix))) &&
  // As on the SQLite adapter, the tenant is the one in the metadata (the stream name carries the same).
  (filter.tenantId === undefined ||
    (event.metadata as EventMetadata | undefined)?.tenantId === filter.tenantId);

/** One server-side filter, a superset of `matches`, so that most non-matching events never cross the wire. */
export const serverFilter = (filter: EventFilter = {}): Filter => {
  if (filter.eventTypes?.length) {
    return eventTypeFilter({ regex: `^(?:${filter.eventTypes.map(escapeRegex).join('|')})$` });
  }
  if (filter.streamPrefixes?.length) return streamNameFilter({ prefixes: [...filter.streamPrefixes] });
  // Stream names are `<category>-<tenantId>_<id>`.
  if (filter.tenantId !== undefined)
    return streamNameFilter({ regex: `^[^-]+-${escapeRegex(filter.tenantId)}_` });
  return excludeSystemEvents();
};

/** The chain hash travels in the stored metadata under this key, and is lifted out of it on read. */
export const hashKey = 'chainHash';

export const splitMetadata = (stored: unknown): { metadata: EventMetadata; hash?: string } => {
  const { [hashKey]: hash, ...metadata } = (stored ?? {}) as Record<string, unknown>;
  return { metadata: metadata as unknown as EventMetadata, ...(typeof hash === 'string' ? { hash } : {}) };
};

export const toRecorded = (event: EsdbEvent): RecordedEvent => ({
  id: event.id,
  type: event.type,
  data: event.data,
  ...splitMetadata(event.metadata),
  streamName: event.streamId,
  streamVersion: Number(event.revision),
  // Events read from `$all` always carry their position. Events read from a single stream carry it only on
  // servers from 22.6 on; on older servers they get 0, so never use readStream positions as checkpoints there.
  position: Number(event.position?.prepare ?? 0n),
});

export const fromAfter = (after: number): ReadPosition =>
  after > 0 ? { commit: BigInt(after), prepare: BigInt(after) } : START;

export const toExpectedRevision = (expected: ExpectedVersion): AppendExpectedRevision => {
  switch (expected) {
    case 'any':
      return ANY;
    case 'no_stream':
      return NO_STREAM;
    case 'stream_exists':
      return STREAM_EXISTS;
    default:
      return expected === NO_STREAM_VERSION ? NO_STREAM : BigInt(expected);
  }
};

/** What the server writes as metadata of the `$>` link in a parked stream (key case varies by version). */
export const parkedLinkInfo = (
  metadata: unknown,
  fallbackTime: Date,
): { reason: string; parkedAt: string } => {
  const meta = (typeof metadata === 'object' && metadata !== null ? metadata : {}) as Record<string, unknown>;
  const text = (value: unknown) => (typeof value === 'string' ? value : undefined);
  const reason = text(meta.reason) ?? text(meta.Reason) ?? '';
  const added = new Date(text(meta.added) ?? text(meta.Added) ?? fallbackTime.toISOString());
  return {
    // A nack(park) is stored as "Client explicitly NAK'ed message.\n<our reason>".
    reason: reason.replace(/^Client explicitly NAK'ed message\.\n?/, ''),
    parkedAt: (Number.isNaN(added.getTime()) ? fallbackTime : added).toISOString(),
  };
};
