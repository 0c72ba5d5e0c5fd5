import type { Logger } from 'pino';
import { isStoreFailure } from '../core/store-failures.js';
import { supervise, type Supervised } from '../core/supervisor.js';
import { tracedHandler } from './traced-handler.js';
import type { EventStore, PersistentHandler, PersistentSubscriptionSettings } from './port.js';

/**
 * Logs each event the group is about to park: a nack with `park`, or one more failure past its retries
 * (a throw counts as a nack with retry; a store failure fails the consumer instead, parks nothing).
 */
const loggingParked =
  (group: string, maxRetryCount: number, handler: PersistentHandler, logger: Logger): PersistentHandler =>
  async (delivery) => {
    const { event, retryCount } = delivery;
    const parked = (error: string) =>
      logger.warn(
        { group, eventId: event.id, position: event.position, error, retryCount },
        'consumer group parked an event',
      );
    try {
      const outcome = await handler(delivery);
      if (outcome.kind === 'nack' && (outcome.action === 'park' || retryCount >= maxRetryCount)) {
        parked(outcome.reason);
      }
      return outcome;
    } catch (error) {
      if (!isStoreFailure(error) && retryCount >= maxRetryCount) parked((error as Error).message);
      throw error;
    }
  };

/**
 * A consumer of a persistent subscription under a supervisor: each start ensures the group, then joins it,
 * so a store that fails while the group is ensured is retried with back-off like a consumer that fails.
 */
export const superviseGroup = (
  eventStore: EventStore,
  group: string,
  settings: PersistentSubscriptionSettings,
  handler: PersistentHandler,
  { logger, concurrency }: { logger: Logger; concurrency?: number },
): Supervised =>
  supervise(
    group,
    async () => {
      await eventStore.ensurePersistentSubscription(group, settings);
      // Each delivery continues the trace of the event delivered (src/eventstore/traced-handler.ts).
      return eventStore.subscribePersistent(
        group,
        tracedHandler(group, loggingParked(group, settings.maxRetryCount, handler, logger)),
        { concurrency },
      );
    },
    { logger },
  );
