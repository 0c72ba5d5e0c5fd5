import { everySecond } from '../core/sweeper.js';
import { platformPartition } from '../readmodels/aggregate-projection.js';
import { lookAheadMs, type DelivererDeps, type DelivererState } from './deliverer-types.js';
import type { Delivery } from './delivery.decider.js';
import { dueBySubscription, firstSweep } from './sweep.js';

/** The sweep every second over the deliveries read model: what is due, and claims that timed out. */
export const dueSweeper = (
  deps: DelivererDeps,
  parts: {
    state: DelivererState;
    kick: (tenantId: string, deliveryId: string, webhookId: string) => void;
    kickWhenDue: (delivery: Pick<Delivery, 'tenantId' | 'deliveryId' | 'webhookId' | 'dueAt'>) => void;
  },
) => {
  const { settings, logger } = deps;
  const { state, kick, kickWhenDue } = parts;

  /** Where the next sweep starts (sweep.ts): with the oldest due, or on in its round of the subscriptions. */
  let sweepPosition = firstSweep;

  /**
   * Attempts everything due by now, from the deliveries read model: retries round-robin by subscription, so
   * that one hung receiver's backlog cannot hold back anyone else's; then the claims that timed out, which
   * are few (at most the concurrency of each instance that stopped answering).
   */
  const sweepDue = async () => {
    const now = deps.clock();
    const page = await dueBySubscription(
      deps.readModels,
      deps.deliveriesCollection,
      new Date(now.getTime() + lookAheadMs),
      sweepPosition,
    );
    sweepPosition = page.next;
    for (const delivery of page.due) kickWhenDue(delivery);
    const stale = await deps.readModels.list<Delivery>(deps.deliveriesCollection, {
      tenantId: platformPartition,
      filters: [
        { op: 'eq', field: 'status', value: 'claimed' },
        {
          op: 'lte',
          field: 'claimedAt',
          value: new Date(now.getTime() - settings.claimTimeoutMs).toISOString(),
        },
      ],
      sort: { field: 'claimedAt', direction: 'asc' },
      limit: 1000,
    });
    for (const delivery of stale) kick(delivery.tenantId, delivery.deliveryId, delivery.webhookId);
  };

  return everySecond(sweepDue, {
    paused: () => state.stopping.signal.aborted,
    onError: (error) => logger.error({ err: error }, 'webhook sweep failed'),
  });
};
