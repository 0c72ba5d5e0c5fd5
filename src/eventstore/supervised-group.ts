import type { Logger } from 'pino';
import { supervise, type Supervised } from '../core/supervisor.js';
import { tracedHandler } from '../observability/tracing.js';
import type { EventStore, PersistentHandler, PersistentSubscriptionSettings } from './port.js';

/**
 * A consumer of a persistent subscription under a supervisor: each start ensures the group, then joins it,
 * so a store that fails while the group is ensured is retried with back-off like a consumer that fails.
 */
export const superviseGroup = (
  eventStore: EventStore,
  group: string,
  settings: PersistentSubscriptionSettings,
  handler: PersistentHandler,
  { logger }: { logger: Logger },
): Supervised =>
  supervise(
    group,
    async () => {
      await eventStore.ensurePersistentSubscription(group, settings);
      // Each delivery continues the trace of the event delivered (src/observability/tracing.ts).
      return eventStore.subscribePersistent(group, tracedHandler(group, handler));
    },
    { logger },
  );
