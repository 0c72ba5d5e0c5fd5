import type { NewEvent } from '../core/events.js';
import { currentVersionIn, upcaster, type UpcasterRegistry } from '../core/upcasting.js';
import type { EventStore } from './port.js';

/** A read asked for events exactly as stored (`raw: true`), as hash verification does. */
const isRaw = (options: unknown): boolean => (options as { raw?: boolean } | undefined)?.raw === true;

/**
 * The read path of any event store adapter, with every event it hands out upcast to the current version
 * of its type: stream and `$all` reads, catch-up and persistent subscriptions, parked events; and its
 * appends stamped with that version. Applied once, in src/stores.ts with the features' schema histories
 * (src/features.ts), so the service, the CLI and every consumer see one shape per event type.
 *
 * The adapters themselves return events exactly as stored: an event's `hash` (tamper evidence) covers the
 * stored form, so a chain is verified on events read with `raw: true` (or from the adapter itself).
 */
export const withUpcasting = (store: EventStore, schemas: UpcasterRegistry): EventStore => {
  const upcast = upcaster(schemas);
  // New events are written at the current version of their type, unless the writer named one.
  const stamped = (event: NewEvent): NewEvent =>
    event.metadata.schemaVersion === undefined
      ? { ...event, metadata: { ...event.metadata, schemaVersion: currentVersionIn(schemas, event.type) } }
      : event;
  return {
    kind: store.kind,
    appendToStream: (streamName, events, expectedVersion) =>
      store.appendToStream(streamName, events.map(stamped), expectedVersion),
    readStream: async (streamName, options) => {
      const events = await store.readStream(streamName, options);
      return isRaw(options) ? events : events.map(upcast);
    },
    readAll: async (options) => {
      const page = await store.readAll(options);
      return isRaw(options) ? page : { ...page, events: page.events.map(upcast) };
    },
    readAllBackward: async (options) => {
      const page = await store.readAllBackward(options);
      return { ...page, events: page.events.map(upcast) };
    },
    // Always as stored: it is only for hash verification.
    readTenantByStream: (tenantId, options) => store.readTenantByStream(tenantId, options),
    headPosition: () => store.headPosition(),
    subscribe: (options, handler) =>
      store.subscribe(options, (events, lastPosition) => handler(events.map(upcast), lastPosition)),
    ensurePersistentSubscription: (group, settings) => store.ensurePersistentSubscription(group, settings),
    subscribePersistent: (group, handler, options) =>
      store.subscribePersistent(
        group,
        (delivery) => handler({ ...delivery, event: upcast(delivery.event) }),
        options,
      ),
    listParked: async (group) =>
      (await store.listParked(group)).map((parked) => ({ ...parked, event: upcast(parked.event) })),
    replayParked: (group) => store.replayParked(group),
    ...(store.groupCheckpoint ? { groupCheckpoint: store.groupCheckpoint.bind(store) } : {}),
    acquireLease: (name, owner, ttlMs) => store.acquireLease(name, owner, ttlMs),
    releaseLease: (name, owner) => store.releaseLease(name, owner),
    ping: () => store.ping(),
    close: () => store.close(),
  };
};
