import type { Logger } from 'pino';
import { supervise, type Supervised } from '../core/supervisor.js';
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
      return eventStore.subscribePersistent(group, handler);
    },
    { logger },
  );
