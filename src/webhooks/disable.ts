import { retryOnConflict } from '../core/conflicts.js';
import { handleCommand } from '../core/command-handler.js';
import type { DelivererDeps, DisableReason } from './deliverer-types.js';
import { systemContext } from './delivery-claims.js';
import type { Delivery } from './delivery.decider.js';
import { webhooksDecider, webhooksStream } from './subscription.decider.js';

/** How the deliverer disables a subscription whose deliveries failed, or whose owner lost the scope. */
export const subscriptionDisabler = (deps: DelivererDeps) => {
  const { eventStore, logger } = deps;

  /**
   * Disables the subscription. The e-mail is not sent here: the notifier consumes WebhookDisabled, so a
   * crash right after the disable, or a mail server that is down, cannot lose it.
   */
  const disable = async (
    delivery: Delivery,
    cause: DisableReason,
    reason = `Delivery ${delivery.deliveryId} of ${delivery.eventType} ${delivery.eventId} failed ${delivery.attempts + 1} times`,
  ) => {
    const result = await retryOnConflict(() =>
      handleCommand(
        eventStore,
        webhooksDecider,
        webhooksStream(delivery.tenantId),
        {
          type: 'Disable',
          webhookId: delivery.webhookId,
          reason,
          // The delivery that used up its retries is the one a replay must send again.
          ...(cause === 'retries_exhausted' ? { deliveryId: delivery.deliveryId } : {}),
        },
        systemContext(delivery.tenantId, deps.clock(), delivery.deliveryId),
      ),
    );
    // Already disabled (by a user, or by another instance): not this one's to report.
    if (result.events.length === 0) return;
    logger.error(
      { subscriptionId: delivery.webhookId, deliveryId: delivery.deliveryId, cause, reason },
      'webhook subscription disabled',
    );
    deps.observer?.disabled(cause);
  };

  return disable;
};
