import { handleCommand } from '../core/command-handler.js';
import { streamName } from '../core/streams.js';
import { lostRace } from '../core/system-context.js';
import type { DelivererDeps } from './deliverer-types.js';
import { systemContext } from './delivery-claims.js';
import { deliveryDecider } from './delivery.decider.js';

/** Resumes the deliveries a disable cancelled, and queues their attempts with `kick`. */
export const deliveryResumer = (
  deps: DelivererDeps,
  kick: (tenantId: string, deliveryId: string, webhookId: string) => void,
) => {
  const { eventStore } = deps;

  /**
   * Resumes a delivery that was cancelled because its subscription was disabled (see Resume in
   * delivery.ts); false when there was nothing to resume.
   */
  const resume = async (tenantId: string, deliveryId: string): Promise<boolean> => {
    try {
      const result = await handleCommand(
        eventStore,
        deliveryDecider,
        streamName('delivery', tenantId, deliveryId),
        { type: 'Resume' },
        systemContext(tenantId, deps.clock(), deliveryId),
      );
      if (result.events.length === 0 || result.state.status === 'absent') return false;
      kick(tenantId, deliveryId, result.state.delivery.webhookId);
      return true;
    } catch (error) {
      if (lostRace(error)) return false;
      throw error;
    }
  };

  return resume;
};
