import {
  BACKWARDS,
  END,
  EventStoreDBClient,
  FORWARDS,
  NO_STREAM,
  PARK,
  PersistentSubscriptionExistsError,
  RETRY,
  START,
  StreamNotFoundError,
  WrongExpectedVersionError,
  jsonEvent,
  persistentSubscriptionToAllSettingsFromDefaults,
  type AllStreamResolvedEvent,
  type JSONType,
  type ReadStreamOptions,
  type ReadableSubscription,
  type ResolvedEvent,
} from '@eventstore/db-client';
import { NO_STREAM as NO_STREAM_VERSION } from '../core/events.js';
import type { RecordedEvent } from '../core/events.js';
import { VersionConflictError } from '../core/errors.js';
import type { EventFilter, EventStore, ParkedEvent, Subscription } from './port.js';
import { handlerOutcome } from './handler-outcomes.js';
import { eventHash, genesisHash, withSalts } from './hash-chain.js';
import {
  fromAfter,
  hashKey,
  isSystem,
  matches,
  parkedLinkInfo,
  serverFilter,
  splitMetadata,
  toExpectedRevision,
  toRecorded,
} from './esdb-mapping.js';

/**
 * The EventStoreDB adapter (client v6, gRPC).
 *
 * Positions: our `position` is the *prepare* position of the event in `$all`. Since the server writes
 * every appended event as its own record (no explicit transactions over gRPC), commit and prepare are equal
 * and distinct per event, so the number is a strictly increasing global order. Reads of `$all` from a
 * position are inclusive, so every read from `after` also drops the event at `after` itself.
 */

/**
 * Drives a client subscription as an async iterator, one `deliver` at a time. stop() lets the delivery in
 * hand finish (and ack), then cancels the gRPC call.
 */
/**
 * Feeds a subscription's items to `deliver`, up to `concurrency` at once (each settles its own item). The
 * first delivery that fails ends it; stopping lets the deliveries under way finish, then closes the stream.
 */
const consume = <E>(
  source: ReadableSubscription<E>,
  deliver: (item: E) => Promise<void>,
  concurrency = 1,
): Subscription => {
  let stopped = false;
  let closed: Promise<void> | null = null;
  let failed: { error: unknown } | null = null;
  const inFlight = new Set<Promise<void>>();
  // While iterating, the iterator sees stream errors itself; this only keeps a late one from crashing the process.
  source.on('error', () => undefined);
  const close = () =>
    (closed ??= (async () => {
      source.destroy();
      await source.unsubscribe();
    })());
  const start = (item: E) => {
    const delivery: Promise<void> = deliver(item)
      .catch((error: unknown) => {
        failed ??= { error };
      })
      .finally(() => inFlight.delete(delivery));
    inFlight.add(delivery);
  };
  const run = async (): Promise<void> => {
    try {
      for await (const item of source) {
        if (stopped) break;
        start(item);
        while (inFlight.size >= concurrency && !failed) await Promise.race(inFlight);
        if (failed) break;
        if (stopped) break;
      }
      if (!stopped && !failed) throw new Error('EventStoreDB ended the subscription');
    } catch (error) {
      // Closing the stream under the iterator on stop() is not a failure; a delivery failing is.
      if (!stopped) throw error;
    } finally {
      await Promise.all(inFlight);
      await close();
    }
    if (failed) throw failed.error;
  };
  const done = run();
  return {
    done,
    stop: async () => {
      stopped = true;
      // The deliveries under way settle their events; then the stream closes, which ends the iteration.
      await Promise.all(inFlight);
      await close();
      await done.catch(() => undefined);
    },
  };
};

/** Connects lazily: the first command opens the channel, so this resolves even while the server is down. */
export const openEventStoreDb = (connectionString: string): Promise<EventStore> => {
  // The v6 client parses only esdb:// and esdb+discover://; KurrentDB's schemes name the same protocol.
  const client = EventStoreDBClient.connectionString(
    connectionString.replace(/^(?:kurrentdb|kdb)(\+discover)?:\/\//, 'esdb$1://'),
  );
  // The server remembers a group's filter, but cannot apply all of it; we re-apply it to what it delivers.
  const groupFilters = new Map<string, EventFilter>();

  const readResolved = async (streamName: string, options: ReadStreamOptions): Promise<ResolvedEvent[]> => {
    const resolved: ResolvedEvent[] = [];
    try {
      for await (const item of client.readStream(streamName, options)) resolved.push(item);
    } catch (error) {
      if (error instanceof StreamNotFoundError) return [];
      throw error;
    }
    return resolved;
  };

  const store: EventStore = {
    kind: 'eventstoredb',

    appendToStream: async (streamName, events, expectedVersion) => {
      if (events.length === 0) throw new Error('appendToStream needs at least one event');
      // The chain needs the stream's head: the append then expects exactly that head, so two writers can
      // never both chain to it. A caller that expected any version gets its append retried on a lost race.
      for (let attempt = 1; ; attempt += 1) {
        const [last] = await readResolved(streamName, {
          direction: BACKWARDS,
          fromRevision: END,
          maxCount: 1,
        });
        const head = last?.event
          ? {
              version: Number(last.event.revision),
              hash: splitMetadata(last.event.metadata).hash ?? genesisHash,
            }
          : { version: NO_STREAM_VERSION, hash: genesisHash };
        const exact =
          expectedVersion === 'any' || expectedVersion === 'stream_exists' ? head.version : expectedVersion;
        if (expectedVersion === 'stream_exists' && head.version === NO_STREAM_VERSION) {
          throw new VersionConflictError(streamName, 'stream_exists', NO_STREAM_VERSION);
        }
        let previousHash = head.hash;
        const chained = events.map((event, index) => {
          // As chainEvent does on the other stores: secret fields get their salts, stored with the event.
          const salted = withSalts({ ...event, streamName, streamVersion: head.version + 1 + index });
          previousHash = eventHash(previousHash, salted);
          return jsonEvent({
            id: salted.id,
            type: salted.type,
            data: salted.data as JSONType,
            metadata: { ...salted.metadata, [hashKey]: previousHash },
          });
        });
        try {
          const result = await client.appendToStream(streamName, chained, {
            expectedRevision: toExpectedRevision(exact),
          });
          // One append is one write: its reported position is that of its last event.
          return {
            nextExpectedVersion: Number(result.nextExpectedRevision),
            lastPosition: Number(result.position?.prepare ?? 0n),
          };
        } catch (error) {
          if (!(error instanceof WrongExpectedVersionError)) throw error;
          if ((expectedVersion === 'any' || expectedVersion === 'stream_exists') && attempt < 5) continue;
          const actual = error.actualVersion === NO_STREAM ? NO_STREAM_VERSION : Number(error.actualVersion);
          throw new VersionConflictError(streamName, String(expectedVersion), actual);
        }
      }
    },

    readStream: async (streamName, { fromVersion = 0, maxCount } = {}) => {
      const resolved = await readResolved(streamName, {
        direction: FORWARDS,
        fromRevision: BigInt(fromVersion),
        maxCount,
      });
      return resolved.flatMap(({ event }) => (event ? [toRecorded(event)] : []));
    },

    readAll: async ({ after = 0, maxCount = 1000, filter = {} } = {}) => {
      // The v6 client's readAll takes no server-side filter, so we scan `$all` until the page is full or
      // the end is reached. lastPosition covers the skipped events too, so the next page does not rescan them.
      const read = client.readAll({ direction: FORWARDS, fromPosition: fromAfter(after) });
      const events: RecordedEvent[] = [];
      let lastPosition = after;
      try {
        for await (const { event } of read) {
          if (!event) continue;
          const recorded = toRecorded(event);
          if (after > 0 && recorded.position <= after) continue;
          lastPosition = recorded.position;
          if (!matches(filter, recorded)) continue;
          events.push(recorded);
          if (events.length >= maxCount) return { events, lastPosition, isEnd: false };
        }
      } finally {
        await read.cancel();
      }
      return { events, lastPosition, isEnd: true };
    },

    readAllBackward: async ({ before = Number.MAX_SAFE_INTEGER, maxCount = 1000, filter = {} } = {}) => {
      // From the end of `$all`, skipping what is at or past `before`: our positions are not the server's, so
      // the read cannot start at one; the history is paged from its newest events, so the skip stays short.
      const read = client.readAll({ direction: BACKWARDS, fromPosition: END });
      const events: RecordedEvent[] = [];
      try {
        for await (const { event } of read) {
          const recorded = event && toRecorded(event);
          if (!recorded || isSystem(recorded) || recorded.position >= before) continue;
          if (!matches(filter, recorded)) continue;
          events.push(recorded);
          if (events.length >= maxCount) return { events, lastPosition: recorded.position, isStart: false };
        }
      } finally {
        await read.cancel();
      }
      return { events, lastPosition: 0, isStart: true };
    },

    readTenantByStream: async function* (tenantId, { pageSize = 1000 } = {}) {
      // EventStoreDB has no index by tenant and stream name: one scan of `$all` finds the tenant's streams,
      // whose names are then held, sorted, while each stream is read in version order (its memory grows
      // with the tenant's streams, names only). Positions on stream reads need a server from 22.6 on.
      const streams = new Set<string>();
      const scan = client.readAll({ direction: FORWARDS, fromPosition: START });
      try {
        for await (const { event } of scan) {
          const recorded = event && toRecorded(event);
          if (recorded && matches({ tenantId }, recorded)) streams.add(recorded.streamName);
        }
      } finally {
        await scan.cancel();
      }
      let page: RecordedEvent[] = [];
      for (const name of [...streams].sort()) {
        for (const { event } of await readResolved(name, { direction: FORWARDS, fromRevision: START })) {
          const recorded = event && toRecorded(event);
          if (!recorded || !matches({ tenantId }, recorded)) continue;
          page.push(recorded);
          if (page.length < pageSize) continue;
          yield page;
          page = [];
        }
      }
      if (page.length > 0) yield page;
    },

    headPosition: async () => {
      // The newest event of ours: the tail of `$all` is often a server event (e.g. a subscription checkpoint).
      const read = client.readAll({ direction: BACKWARDS, fromPosition: END });
      try {
        for await (const { event } of read) {
          const recorded = event && toRecorded(event);
          if (recorded && !isSystem(recorded)) return recorded.position;
        }
      } finally {
        await read.cancel();
      }
      return 0;
    },

    subscribe: ({ after, filter = {}, batchSize = 500 }, handler) => {
      // The stream buffers up to batchSize events while the handler runs; they form the next batch.
      const source = client.subscribeToAll(
        { fromPosition: fromAfter(after), filter: serverFilter(filter) },
        { highWaterMark: batchSize },
      );
      return consume(source, async (first) => {
        const batch: AllStreamResolvedEvent[] = [first];
        while (batch.length < batchSize) {
          const next = source.read() as AllStreamResolvedEvent | null;
          if (next === null) break;
          batch.push(next);
        }
        const seen = batch
          .flatMap(({ event }) => (event ? [toRecorded(event)] : []))
          .filter((event) => after === 0 || event.position > after);
        const events = seen.filter((event) => matches(filter, event));
        const last = seen.at(-1);
        if (last && events.length > 0) await handler(events, last.position);
      });
    },

    ensurePersistentSubscription: async (group, { filter = {}, startFrom, maxRetryCount }) => {
      groupFilters.set(group, filter);
      try {
        await client.createPersistentSubscriptionToAll(
          group,
          persistentSubscriptionToAllSettingsFromDefaults({
            startFrom: startFrom === 'start' ? START : END,
            maxRetryCount,
            resolveLinkTos: false,
          }),
          { filter: serverFilter(filter) },
        );
      } catch (error) {
        // An existing group keeps its settings and checkpoint.
        if (!(error instanceof PersistentSubscriptionExistsError)) throw error;
      }
    },

    subscribePersistent: (group, handler, { concurrency = 1 } = {}) => {
      // A group ensured by another process: only the server-side part of its filter applies here.
      const filter = groupFilters.get(group) ?? {};
      const source = client.subscribeToPersistentSubscriptionToAll(group);
      return consume(
        source,
        async (resolved) => {
          const event = resolved.event && toRecorded(resolved.event);
          if (!event || !matches(filter, event)) return source.ack(resolved);
          const outcome = await handlerOutcome(handler, event, resolved.retryCount ?? 0);
          if (outcome.kind === 'ack') return source.ack(resolved);
          return source.nack(outcome.action === 'park' ? PARK : RETRY, outcome.reason, resolved);
        },
        Math.max(1, concurrency),
      );
    },

    listParked: async (group) => {
      // Parked events are `$>` links in this system stream; replaying truncates it. The server keeps no retry
      // count for a parked event, so retryCount is 0; reason and time come from the link's metadata.
      const resolved = await readResolved(`$persistentsubscription-$all::${group}-parked`, {
        resolveLinkTos: true,
      });
      return resolved.flatMap(({ event, link }): ParkedEvent[] =>
        event
          ? [
              {
                event: toRecorded(event),
                retryCount: 0,
                ...parkedLinkInfo(link?.metadata, link?.created ?? event.created),
              },
            ]
          : [],
      );
    },

    replayParked: (group) => client.replayParkedMessagesToAll(group),

    // Consumer groups share their events among any number of consumers here, and read models are guarded
    // per document: no duty needs a single owner, so every process works.
    acquireLease: (_name, owner, ttlMs) =>
      Promise.resolve({ acquired: true, holder: owner, expiresAt: new Date(Date.now() + ttlMs) }),
    releaseLease: () => Promise.resolve(),

    ping: async () => {
      // A bounded deadline: reads have none by default and would wait for a server that is down.
      for await (const _ of client.readAll({
        direction: BACKWARDS,
        fromPosition: END,
        maxCount: 1,
        deadline: 5000,
      })) {
        // draining the one event is the whole check
      }
    },

    close: () => client.dispose(),
  };
  return Promise.resolve(store);
};
