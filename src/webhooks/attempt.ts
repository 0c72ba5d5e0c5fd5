import { handleCommand } from '../core/command-handler.js';
import { streamName } from '../core/streams.js';
import { lostRace } from '../core/system-context.js';
import type { cachedStreams } from '../eventstore/cached-streams.js';
import { canonicalJson } from '../eventstore/hash-chain.js';
import { ownerLacksScope } from './creator.js';
import type { DelivererDeps, DelivererState, DisableReason } from './deliverer-types.js';
import { aheadBudgetMs, claimAgeMs } from './claim-ahead.js';
import { isClaimed, systemContext, type Claimed, type DeliveryClaims } from './delivery-claims.js';
import { deliveryDecider, type Delivery, type DeliveryEvent, type Outcome } from './delivery.decider.js';
import type { SecretCache } from './secret-cache.js';
import { outcomeBatch, outcomeDelayMs, outcomeGate } from './outcome-gate.js';
import { AttemptAbortedError, fixedHeaders } from './sender.js';
import { signatureHeaders } from './signing.js';
import { entryOf, webhooksStream } from './subscription.decider.js';

/** What an attempt uses besides the deliverer's dependencies: the other parts of the same deliverer. */
export interface AttemptParts {
  state: DelivererState;
  claims: DeliveryClaims;
  secrets: SecretCache;
  credentials: ReturnType<typeof cachedStreams>;
  disable: (delivery: Delivery, cause: DisableReason, reason?: string) => Promise<void>;
  /** Schedules the next attempt of a delivery left scheduled (due-timers.ts). */
  kickWhenDue: (delivery: Pick<Delivery, 'tenantId' | 'deliveryId' | 'webhookId' | 'dueAt'>) => void;
}

/** One attempt of a delivery: the claim, the signed POST, and the outcome recorded and reported. */
export const deliveryAttempts = (deps: DelivererDeps, parts: AttemptParts) => {
  const { eventStore, settings, logger } = deps;
  const { state, credentials, disable, kickWhenDue } = parts;
  const { newClaim, onClaimed, settle } = parts.claims;
  const { secretOf, previousSecretOf } = parts.secrets;
  const outcomes = outcomeGate(outcomeBatch, outcomeDelayMs);
  const budgetMs = aheadBudgetMs(settings);

  /** Every failed attempt is a warn line with stable fields (docs/operations.md#logs); all are counted. */
  const reportAttempt = (
    delivery: Delivery,
    outcome: Outcome,
    recorded: readonly DeliveryEvent[],
    exhausted: boolean,
  ) => {
    const attempted = recorded.find((event) => event.type === 'DeliveryAttempted')?.data;
    const nextAttemptAt = attempted?.nextAttemptAt ?? null;
    if (!outcome.ok) {
      logger.warn(
        {
          subscriptionId: delivery.webhookId,
          deliveryId: delivery.deliveryId,
          eventType: delivery.eventType,
          attempt: attempted?.attempt ?? delivery.attempts + 1,
          status: outcome.statusCode,
          error: outcome.error,
          nextAttemptAt,
        },
        'webhook attempt failed',
      );
    }
    deps.observer?.attempted({
      ok: outcome.ok,
      retrying: nextAttemptAt !== null,
      exhausted,
      manual: delivery.manual,
      occurredAt: delivery.payload.timestamp,
    });
  };

  /**
   * The attempt of a delivery this instance has claimed, in a slot it holds until the receiver answered.
   * The receiver gets only what the subscription's owner may still read (creator.ts); when it may not, the
   * subscription is disabled with the reason, as after failed deliveries, and the e-mail follows.
   */
  const attemptClaimed = async (
    tenantId: string,
    claimed: Claimed,
    release: () => void,
  ): Promise<Outcome | null> => {
    const delivery = claimed.state.delivery;
    const entry = entryOf((await deps.subscriptions(webhooksStream(tenantId))).state, delivery.webhookId);
    if (!entry || (entry.subscription.status !== 'active' && !delivery.manual)) {
      release();
      await onClaimed(tenantId, claimed, {
        type: 'Cancel',
        reason: entry ? `subscription ${entry.subscription.status}` : 'subscription deleted',
      });
      return null;
    }
    const lacking = await ownerLacksScope(credentials, tenantId, entry.owner, delivery.eventType);
    if (lacking) {
      release();
      // A test event never disables the subscription: its type may be one the subscription does not list.
      if (delivery.test) {
        await onClaimed(tenantId, claimed, { type: 'Cancel', reason: 'owner lacks scope' });
        return null;
      }
      await disable(delivery, 'owner_lacks_scope', lacking);
      await onClaimed(tenantId, claimed, { type: 'Cancel', reason: 'subscription disabled' });
      return null;
    }
    // Canonical JSON: every attempt sends the same bytes, whether its payload came from the store (which
    // keeps it canonical) or from the append that scheduled it.
    const body = canonicalJson(delivery.payload);
    const headers = signatureHeaders(
      delivery.payload.id,
      body,
      secretOf(entry.sealedSecret),
      deps.clock(),
      previousSecretOf(entry),
    );
    // The last look before the POST: the reads above may have waited (a process frozen, a store that
    // stalled, a claim whose append answered only after a freeze) until another instance may take the
    // delivery over. A claim older than the budget is given back unattempted: POSTed, it could arrive twice.
    const ageMs = claimAgeMs(delivery.claimedAt, deps.clock());
    if (ageMs > budgetMs) {
      release();
      logger.warn(
        { subscriptionId: delivery.webhookId, deliveryId: delivery.deliveryId, ageMs, budgetMs },
        'webhook claim too old to POST on; released unattempted',
      );
      await releaseUnattempted(tenantId, claimed, `claimed ${ageMs} ms before its POST`);
      return null;
    }
    let outcome: Outcome;
    try {
      outcome = await deps.sender.send(
        tenantId,
        entry.subscription.url,
        body,
        headers,
        state.interrupting.signal,
      );
    } catch (error) {
      release();
      if (!(error instanceof AttemptAbortedError)) throw error;
      // Cut by a shutdown: released, due again at once, for the next start or another instance.
      const released = await settle(tenantId, claimed, {
        type: 'Release',
        claimId: claimed.state.delivery.claimId,
        reason: error.message,
      });
      if (!released) return null;
      logger.warn(
        { deliveryId: delivery.deliveryId },
        'webhook attempt cut by the shutdown deadline; released for a retry',
      );
      return null;
    }
    // A success gives its slot back now, and its outcome waits a moment for others to share its commit. A
    // failure keeps its slot until recorded (and the subscription disabled if that was the last retry), so
    // that a failing receiver's next delivery never slips in before that.
    if (outcome.ok) {
      release();
      await outcomes.pass();
    }
    const recorded = await settle(tenantId, claimed, {
      type: 'RecordOutcome',
      claimId: claimed.state.delivery.claimId,
      outcome,
      now: deps.clock(),
      retryDelaysMs: settings.retryDelaysMs,
      // What the log shows of the request: the signatures, never the secret they were made with.
      request: { url: entry.subscription.url, headers: { ...fixedHeaders, ...headers } },
    });
    if (!recorded) return outcome;
    const exhausted = recorded.events.some((event) => event.type === 'DeliveryRetriesExhausted');
    reportAttempt(delivery, outcome, recorded.events, exhausted);
    if (exhausted) await disable(delivery, 'retries_exhausted');
    if (recorded.state.status === 'present' && recorded.state.delivery.status === 'scheduled') {
      kickWhenDue(recorded.state.delivery);
    }
    return outcome;
  };

  /**
   * Claims the delivery for this instance; null when another instance was first (or it is no longer due).
   * Claims issued in one turn of the event loop share the event store's commit (its group commit).
   */
  const claim = async (tenantId: string, deliveryId: string): Promise<Claimed | null> => {
    try {
      const claimed = await handleCommand(
        eventStore,
        deliveryDecider,
        streamName('delivery', tenantId, deliveryId),
        { type: 'Claim', now: deps.clock(), ...newClaim() },
        systemContext(tenantId, deps.clock(), deliveryId),
      );
      return isClaimed(claimed) ? claimed : null;
    } catch (error) {
      if (lostRace(error)) return null;
      throw error;
    }
  };

  /** Claims the delivery, then attempts it; a lost claim means another instance is on it. */
  const claimAndAttempt = async (tenantId: string, deliveryId: string, release: () => void) => {
    const claimed = await claim(tenantId, deliveryId);
    if (claimed) await attemptClaimed(tenantId, claimed, release);
  };

  /**
   * Gives back a claim no attempt was made on (claimed ahead, then the stop began or it waited too long):
   * due again at once, without counting; false when the claim was no longer current.
   */
  const releaseUnattempted = async (tenantId: string, claimed: Claimed, reason: string) =>
    (await settle(tenantId, claimed, {
      type: 'Release',
      claimId: claimed.state.delivery.claimId,
      reason,
    })) !== null;

  return {
    attemptClaimed,
    claim,
    claimAndAttempt,
    releaseUnattempted,
    /** Lets the waiting outcomes go now, into the commit of the claims appended in this turn. */
    recordOutcomesNow: outcomes.open,
  };
};

export type DeliveryAttempts = ReturnType<typeof deliveryAttempts>;
