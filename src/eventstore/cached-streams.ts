import { LRUCache } from 'lru-cache';
import type { RecordedEvent } from '../core/events.js';
import type { EventStore, WholeStreamReader } from './port.js';

/**
 * What a worker keeps of the small streams it reads on every step (a tenant's webhook subscriptions, a
 * credential): a view of each, extended with only what was appended since, so that a step costs one read
 * of nothing new rather than a read, an upcast and a fold of every event. Never stale: each call is
 * answered by a read of the store sent after the call was made. Calls made before that read is sent share
 * it: the read waits for the rest of the event-loop turn, so that the events of one consumer's batch,
 * handled side by side, cost one read of their tenant's subscriptions rather than one each (a statement per
 * create on PostgreSQL). Streams are append-only, so extending is enough. At most `maxStreams` views are
 * kept; the one read longest ago goes first.
 */
export const cachedViews = <View>(
  eventStore: Pick<EventStore, 'readStream'>,
  view: { empty: View; extend: (view: View, newer: readonly RecordedEvent[]) => View },
  { maxStreams = 1000 }: { maxStreams?: number } = {},
) => {
  const kept = new LRUCache<string, { version: number; view: View }>({ max: maxStreams });
  /** The read each stream's callers wait for, not sent yet: a call joins it, none joins one sent. */
  const unsent = new Map<string, Promise<View>>();

  const readNow = async (streamName: string): Promise<View> => {
    const before = kept.get(streamName);
    const newer = await eventStore.readStream(streamName, { fromVersion: (before?.version ?? -1) + 1 });
    // Another read of the stream may have extended the view while this one waited: extend that one.
    const current = kept.get(streamName) ?? before ?? { version: -1, view: view.empty };
    const added = newer.filter((event) => event.streamVersion > current.version);
    const next =
      added.length === 0
        ? current
        : { version: added.at(-1)!.streamVersion, view: view.extend(current.view, added) };
    kept.set(streamName, next);
    return next.view;
  };

  return (streamName: string): Promise<View> => {
    const waiting = unsent.get(streamName);
    if (waiting) return waiting;
    const read = new Promise<void>((resolve) => setImmediate(resolve)).then(() => {
      unsent.delete(streamName);
      return readNow(streamName);
    });
    unsent.set(streamName, read);
    return read;
  };
};

/** Whole streams through cachedViews, for code that folds a stream itself (readAggregate). */
export const cachedStreams = (
  eventStore: Pick<EventStore, 'readStream'>,
  options?: { maxStreams?: number },
): WholeStreamReader => {
  const read = cachedViews<readonly RecordedEvent[]>(
    eventStore,
    { empty: [], extend: (held, newer) => [...held, ...newer] },
    options,
  );
  // A copy: callers may filter or sort what they get without touching what is kept.
  return { readStream: async (streamName) => [...(await read(streamName))] };
};
