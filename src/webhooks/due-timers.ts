import { lookAheadMs, type DelivererDeps, type DelivererState } from './deliverer-types.js';
import type { Delivery } from './delivery.decider.js';

/** Timers for the attempts due within the look-ahead, kept in `state.dueTimers` so a stop can clear them. */
export const dueKicker = (
  deps: DelivererDeps,
  state: DelivererState,
  kick: (tenantId: string, deliveryId: string, webhookId: string) => void,
) => {
  const { dueTimers } = state;

  /**
   * Attempts a scheduled delivery at its due time: at once when due, by a timer when due within the
   * look-ahead (the sweep comes back for later ones). The timer fires a few milliseconds late rather than
   * early, so the claim never finds the delivery not yet due.
   */
  const kickWhenDue = (delivery: Pick<Delivery, 'tenantId' | 'deliveryId' | 'webhookId' | 'dueAt'>) => {
    const { tenantId, deliveryId, webhookId } = delivery;
    const delayMs = Date.parse(delivery.dueAt ?? '') - deps.clock().getTime();
    if (!(delayMs > 0)) return kick(tenantId, deliveryId, webhookId);
    if (delayMs > lookAheadMs || dueTimers.has(deliveryId) || state.stopping.signal.aborted) return;
    const timer = setTimeout(() => {
      dueTimers.delete(deliveryId);
      kick(tenantId, deliveryId, webhookId);
    }, delayMs + 5);
    timer.unref();
    dueTimers.set(deliveryId, timer);
  };

  return kickWhenDue;
};
