import { handleCommand } from '../core/command-handler.js';
import { ConflictError, UnavailableError } from '../core/errors.js';
import { streamName } from '../core/streams.js';
import type { cachedStreams } from '../eventstore/cached-streams.js';
import type { AttemptTracer } from './attempt-tracing.js';
import { ownerLacksScope } from './creator.js';
import type { DelivererDeps, DelivererState } from './deliverer-types.js';
import { isClaimed, systemContext, type Claimed } from './delivery-claims.js';
import { deliveryDecider, deliveryIdFor, type Claimant, type Outcome } from './delivery.decider.js';
import type { ExternalEvent } from './external.js';
import type { keyedLimiter } from './limiter.js';
import { entryOf, webhooksStream } from './subscription.decider.js';

/** Test deliveries (`POST …/webhooks/{id}/test`), attempted in the same slots as any delivery. */
export const testSender = (
  deps: DelivererDeps,
  parts: {
    state: DelivererState;
    limiter: ReturnType<typeof keyedLimiter>;
    credentials: ReturnType<typeof cachedStreams>;
    newClaim: () => Claimant;
    traced: AttemptTracer;
    attemptClaimed: (tenantId: string, claimed: Claimed, release: () => void) => Promise<Outcome | null>;
  },
) => {
  const { eventStore } = deps;
  const { state, limiter, credentials, newClaim, traced, attemptClaimed } = parts;
  const { inFlight } = state;

  /**
   * A test delivery (`POST …/webhooks/{id}/test`): scheduled and claimed in one append once it has a slot,
   * attempted under the same limits as any delivery (first in its subscription's queue: someone is waiting
   * for the answer), and recorded like any attempt, so it is in the delivery log. It is manual: a failure neither retries nor counts towards a disable. Null
   * when it was not attempted: the subscription was deleted or disabled in the meantime.
   */
  const test = async (
    tenantId: string,
    webhookId: string,
    payload: ExternalEvent,
  ): Promise<{ deliveryId: string; outcome: Outcome | null }> => {
    if (state.stopping.signal.aborted) throw new UnavailableError('The service is stopping', 5);
    // The owner must be able to read the example's type, as for any attempt; but a test is no reason to
    // disable the subscription (its type may be one it does not list), so it is refused, and nothing sent.
    const entry = entryOf((await deps.subscriptions(webhooksStream(tenantId))).state, webhookId);
    const lacking = entry && (await ownerLacksScope(credentials, tenantId, entry.owner, payload.type));
    if (lacking)
      throw new ConflictError(`The test event was not sent, and the subscription is unchanged: ${lacking}`);
    const deliveryId = deliveryIdFor(webhookId, payload.id);
    // In a slot of the subscription's, its tenant's and the overall limit, like any attempt, ahead of the
    // subscription's deliveries waiting for one (someone waits for this answer). It is scheduled and claimed
    // once it has its slot, so that waiting for one cannot outlast its claim.
    const attempt = limiter.run(
      webhookId,
      async (release) => {
        if (state.stopping.signal.aborted) return 'stopping' as const;
        const scheduled = await handleCommand(
          eventStore,
          deliveryDecider,
          streamName('delivery', tenantId, deliveryId),
          {
            type: 'Schedule',
            identity: { deliveryId, webhookId, eventId: payload.id, eventType: payload.type },
            payload,
            now: deps.clock(),
            claim: newClaim(),
            test: true,
          },
          systemContext(tenantId, deps.clock(), deliveryId),
        );
        if (!isClaimed(scheduled)) return null;
        return traced(tenantId, deliveryId, webhookId, () => attemptClaimed(tenantId, scheduled, release));
      },
      { group: tenantId, first: true },
    );
    const settled = attempt.then(
      () => undefined,
      () => undefined,
    );
    inFlight.add(settled);
    void settled.finally(() => inFlight.delete(settled));
    const outcome = await attempt;
    if (outcome === 'stopping') throw new UnavailableError('The service is stopping', 5);
    // Cut by a shutdown: released like any attempt, and worth trying again on another instance.
    if (outcome === null && state.interrupting.signal.aborted)
      throw new UnavailableError('The service stopped before the receiver answered', 5);
    return { deliveryId, outcome };
  };

  return test;
};
