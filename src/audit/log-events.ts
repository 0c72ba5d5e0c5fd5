import type { RecordedEvent } from '../core/events.js';
import type { EventStore } from '../eventstore/port.js';

/** How many events one read of the tenant's log asks for. */
const pageSize = 1000;

/** The 32 bytes a leaf commits to: the event's stored hash. */
export const leafInputOf = (event: RecordedEvent): Buffer => {
  if (event.hash === undefined || !/^[0-9a-f]{64}$/.test(event.hash)) {
    throw new Error(`event ${event.id} at position ${event.position} has no SHA-256 hash to commit to`);
  }
  return Buffer.from(event.hash, 'hex');
};

/**
 * The tenant's events in commit order after `after` and up to `upTo` inclusive, page by page: the leaves of
 * its log tree, in the order and with the filter of the `/events` export (every event whose metadata names
 * the tenant, its digests included).
 */
export async function* tenantLog(
  eventStore: EventStore,
  tenantId: string,
  after: number,
  upTo: number,
): AsyncGenerator<RecordedEvent[]> {
  for (let from = after; from < upTo;) {
    const page = await eventStore.readAll({
      after: from,
      maxCount: pageSize,
      filter: { tenantId },
      raw: true,
    });
    const events = page.events.filter((event) => event.position <= upTo);
    if (events.length > 0) yield events;
    if (page.isEnd || page.lastPosition <= from) return;
    from = page.lastPosition;
  }
}
