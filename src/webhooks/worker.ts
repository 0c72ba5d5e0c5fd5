import type { Supervised } from '../core/supervisor.js';
import { cachedViews } from '../eventstore/cached-streams.js';
import { superviseGroup } from '../eventstore/supervised-group.js';
import type { Mailer } from '../mail/mailer.js';
import { deliverer, type DelivererDeps } from './deliverer.js';
import { mappedDomainEventTypes } from './external.js';
import { disableNotifier, notifierGroup, notifyRetries } from './notifier.js';
import { projectorGroup, webhookProjector } from './projector.js';
import { subscriptionsView } from './subscription.decider.js';

export type { DisableReason, WebhookObserver, WebhookSettings } from './deliverer.js';
export { notifierGroup } from './notifier.js';
export { projectorGroup } from './projector.js';

/** Events the projector schedules deliveries for at once. */
const projectorConcurrency = 32;

/** The deliverer's deps but the view of the subscriptions, which the worker makes; and the notifier's mailer. */
export interface WebhookWorkerDeps extends Omit<DelivererDeps, 'subscriptions'> {
  mailer: Mailer;
}

/**
 * The webhook side of the service, three parts over one view of the tenants' subscriptions:
 * - the projector (projector.ts), a consumer group that schedules a delivery per event and subscription;
 * - the deliverer (deliverer.ts), which attempts deliveries and sweeps for what is due;
 * - the notifier (notifier.ts), a consumer group that e-mails the tenant when a subscription is disabled.
 * The two groups run under a supervisor, which restarts them after any failure.
 */
export const webhookWorker = (deps: WebhookWorkerDeps) => {
  const { eventStore, logger } = deps;
  const subscriptions = cachedViews(eventStore, subscriptionsView);
  const delivering = deliverer({ ...deps, subscriptions });
  const projector = webhookProjector({ eventStore, clock: deps.clock, deliverer: delivering, subscriptions });
  const notify = disableNotifier({ ...deps, subscriptions });
  let consumers: Supervised[] = [];
  /** Aborts the notifier's wait between retries, so stopping never waits for a back-off. New per start. */
  let stopping = new AbortController();

  return {
    schedule: projector.schedule,
    kick: delivering.kick,
    resume: delivering.resume,
    test: delivering.test,
    start: () => {
      stopping = new AbortController();
      consumers = [
        superviseGroup(
          eventStore,
          projectorGroup,
          { filter: { eventTypes: mappedDomainEventTypes }, startFrom: 'start', maxRetryCount: 10 },
          ({ event }) => projector.project(event),
          // Deliveries of different events are independent: scheduled side by side, their appends share
          // commits, and a backlog is worked off many events per commit rather than one.
          { logger, concurrency: projectorConcurrency },
        ),
        superviseGroup(
          eventStore,
          notifierGroup,
          { filter: { eventTypes: ['WebhookDisabled'] }, startFrom: 'start', maxRetryCount: notifyRetries },
          ({ event, retryCount }) => notify(event, retryCount, stopping.signal),
          { logger },
        ),
      ];
      delivering.start();
    },
    consumers: () => consumers.map((consumer) => consumer.status()),
    /**
     * Starts no attempt from now on. Attempts in flight may finish until `deadlineMs` (unbounded without it);
     * then they are cut and released (DeliveryAttemptInterrupted): due again at once, without counting.
     */
    stop: async ({ deadlineMs }: { deadlineMs?: number } = {}) => {
      stopping.abort();
      await delivering.stop({ deadlineMs }, async () => {
        await Promise.all(consumers.map((consumer) => consumer.stop()));
      });
    },
  };
};

export type WebhookWorker = ReturnType<typeof webhookWorker>;
