import { VersionConflictError } from '../core/errors.js';
import { isStoreFailure } from '../core/store-failures.js';
import type { ConsumerOutcome, EventFilter, EventStore, PersistentHandler } from '../eventstore/port.js';
import type { ConsumerProbe } from './metrics-consumers.js';
import type { Metrics } from './metrics.js';

interface Group {
  filter: EventFilter;
  maxRetryCount: number;
  /** The newest position this process settled (acknowledged or parked) for the group. */
  settled: number;
}

/** Settled: the store moves past the event, acknowledged or parked (a retry beyond the limit parks). */
const settles = (outcome: ConsumerOutcome, retryCount: number, maxRetryCount: number) =>
  outcome.kind === 'ack' || outcome.action === 'park' || retryCount >= maxRetryCount;

/**
 * The event store as the service uses it, measured at the port, whatever the adapter: appends (count by
 * result, latency), and for each consumer group the retries it asks for and how far it got, which the
 * consumer metrics read through `probes()`.
 */
export const instrumentEventStore = (
  store: EventStore,
  metrics: Pick<Metrics, 'appends' | 'appendedEvents' | 'appendDuration' | 'consumerRetries'>,
): { eventStore: EventStore; probes: () => ConsumerProbe[] } => {
  const groups = new Map<string, Group>();

  const measured = (group: string, handler: PersistentHandler): PersistentHandler => {
    const retried = () => metrics.consumerRetries.inc({ consumer: group });
    return async (delivery) => {
      const known = groups.get(group);
      try {
        const outcome = await handler(delivery);
        if (!known || settles(outcome, delivery.retryCount, known.maxRetryCount)) {
          if (known) known.settled = Math.max(known.settled, delivery.event.position);
        } else retried();
        return outcome;
      } catch (error) {
        // The store takes a throw for a nack with retry; a store failure fails the consumer instead.
        if (!isStoreFailure(error)) retried();
        throw error;
      }
    };
  };

  const eventStore: EventStore = {
    ...store,
    appendToStream: async (streamName, events, expectedVersion) => {
      const done = metrics.appendDuration.startTimer();
      try {
        const result = await store.appendToStream(streamName, events, expectedVersion);
        metrics.appends.inc({ result: 'ok' });
        metrics.appendedEvents.inc(events.length);
        return result;
      } catch (error) {
        metrics.appends.inc({ result: error instanceof VersionConflictError ? 'conflict' : 'error' });
        throw error;
      } finally {
        done();
      }
    },
    ensurePersistentSubscription: async (group, settings) => {
      await store.ensurePersistentSubscription(group, settings);
      groups.set(group, {
        filter: settings.filter ?? {},
        maxRetryCount: settings.maxRetryCount,
        settled: groups.get(group)?.settled ?? 0,
      });
    },
    subscribePersistent: (group, handler, options) =>
      store.subscribePersistent(group, measured(group, handler), options),
  };

  const probes = (): ConsumerProbe[] =>
    [...groups].map(([name, group]) => ({
      name,
      filter: group.filter,
      // The stored checkpoint moves once per page of acknowledgements; what this process settled since is
      // further on. Without a stored one (EventStoreDB), only what this process settled is known.
      checkpoint: async () => {
        const stored = store.groupCheckpoint ? await store.groupCheckpoint(name) : null;
        const known = Math.max(stored ?? 0, group.settled);
        return stored === null && group.settled === 0 ? null : known;
      },
      parked: async () => (await store.listParked(name)).length,
    }));

  return { eventStore, probes };
};
