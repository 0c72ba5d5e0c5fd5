import type { Context } from 'koa';
import type { ResourceRouteContext } from '../feature.js';
import { handleCommand, readAggregate } from '../core/command-handler.js';
import { streamName } from '../core/streams.js';
import { commandContext } from '../http/command-context.js';
import { deliveryDecider } from './delivery.decider.js';
import { mappedDomainEventTypes, toExternal } from './external.js';
import type { WebhookSubscription } from './subscription.decider.js';
import type { WebhookWorker } from './worker.js';

/**
 * What the routes send again, on behalf of a request: what a subscription missed while it was disabled or
 * paused, and single deliveries as redeliveries. Every step is recorded, then handed to the worker at once.
 */
export const replays = (deps: ResourceRouteContext & { worker: WebhookWorker }, tenantId: string) => {
  const deliveryStream = (deliveryId: string) => streamName('delivery', tenantId, deliveryId);

  /** A delivery sent again, as a redelivery: recorded, then handed to the worker at once. */
  const redeliver = async (ctx: Context, webhookId: string, deliveryId: string) => {
    const result = await handleCommand(
      deps.eventStore,
      deliveryDecider,
      deliveryStream(deliveryId),
      { type: 'Redeliver' },
      commandContext(ctx, deps),
    );
    deps.worker.kick(tenantId, deliveryId, webhookId);
    return result;
  };

  /**
   * The delivery whose retries ran out, which disabled the subscription, is sent again: once, as a
   * redelivery (its retry schedule is spent). 1 when it was, 0 when there is none or it has moved on.
   */
  const redeliverExhausted = async (ctx: Context, webhookId: string, deliveryId: string | null) => {
    if (deliveryId === null) return 0;
    const { state } = await readAggregate(deps.eventStore, deliveryDecider, deliveryStream(deliveryId));
    if (state.status === 'absent' || state.delivery.status !== 'failed') return 0;
    await redeliver(ctx, webhookId, deliveryId);
    return 1;
  };

  /** A cancelled delivery of this subscription (cancels are only ever for a disable, pause or delete) resumes. */
  const resumeCancelled = async (webhookId: string, deliveryId: string) => {
    const { state } = await readAggregate(deps.eventStore, deliveryDecider, deliveryStream(deliveryId));
    if (state.status === 'absent' || state.delivery.webhookId !== webhookId) return false;
    return deps.worker.resume(tenantId, deliveryId);
  };

  /**
   * Schedules what the subscription missed while it was disabled or paused, in the order it happened: the
   * events between `from` and `until`, and the deliveries cancelled meanwhile (events from before whose
   * attempts were still pending).
   */
  const replayMissed = async (subscription: WebhookSubscription, from: number, until: number) => {
    let replayed = 0;
    let after = from;
    for (;;) {
      const page = await deps.eventStore.readAll({
        after,
        maxCount: 500,
        filter: { tenantId, eventTypes: [...mappedDomainEventTypes, 'DeliveryCancelled'] },
      });
      for (const event of page.events.filter((candidate) => candidate.position < until)) {
        if (event.type === 'DeliveryCancelled') {
          if (await resumeCancelled(subscription.id, (event.data as { deliveryId: string }).deliveryId))
            replayed += 1;
          continue;
        }
        for (const external of toExternal(event).filter((candidate) =>
          subscription.events.includes(candidate.type),
        )) {
          const deliveryId = await deps.worker.schedule(tenantId, subscription.id, external, event.id);
          if (deliveryId) {
            deps.worker.kick(tenantId, deliveryId, subscription.id);
            replayed += 1;
          }
        }
      }
      after = page.lastPosition;
      if (page.isEnd || after >= until) return replayed;
    }
  };

  return { redeliver, redeliverExhausted, replayMissed };
};
