import type { Logger } from 'pino';
import type { RecordedEvent } from '../core/events.js';
import type { EventFilter, EventStore } from '../eventstore/port.js';
import { notRunning, supervise, type ConsumerStatus, type Supervised } from '../core/supervisor.js';

/** The events after which a credential must stop working, and the id each one ends. */
const revokedIdOf = new Map<string, (data: Record<string, string>) => string | undefined>([
  ['ApiKeyRevoked', (data) => data.id],
  ['OAuthClientRevoked', (data) => data.id],
  ['UserDisabled', (data) => data.userId],
  ['SessionRevoked', (data) => data.sessionId],
]);

export interface Revocations {
  /** Reads every revocation so far, then follows new ones as they are appended. */
  start(): Promise<void>;
  stop(): Promise<void>;
  isRevoked(ids: readonly string[]): boolean;
  status(): ConsumerStatus;
  /** The event types it follows and the last position it read: what the metrics compute its lag from. */
  readonly filter: EventFilter;
  checkpoint(): number;
}

const consumerName = 'revocations';

/**
 * The set of revoked credential ids, kept by a subscription. Authentication checks it on every request,
 * cached or not, so a revocation takes effect as soon as its event reaches this process (in-process
 * appends wake the subscription at once; EventStoreDB pushes to every instance). A failed subscription is
 * started again by its supervisor from the last revocation it read: a revocation is never missed.
 */
export const revocations = (eventStore: EventStore, logger: Logger): Revocations => {
  const revoked = new Set<string>();
  const filter = { eventTypes: [...revokedIdOf.keys()] };
  let subscription: Supervised | null = null;
  let after = 0;
  const add = (events: readonly RecordedEvent[]) => {
    for (const event of events) {
      const id = revokedIdOf.get(event.type)?.(event.data as Record<string, string>);
      if (id) revoked.add(id);
    }
  };

  return {
    start: async () => {
      for (;;) {
        const page = await eventStore.readAll({ after, maxCount: 1000, filter });
        add(page.events);
        after = page.lastPosition;
        if (page.isEnd) break;
      }
      subscription = supervise(
        consumerName,
        () =>
          eventStore.subscribe({ after, filter }, (events, lastPosition) => {
            add(events);
            after = lastPosition;
            return Promise.resolve();
          }),
        { logger },
      );
    },
    stop: async () => subscription?.stop(),
    status: () => subscription?.status() ?? notRunning(consumerName),
    isRevoked: (ids) => ids.some((id) => revoked.has(id)),
    filter,
    checkpoint: () => after,
  };
};
