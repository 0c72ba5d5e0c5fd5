import { performance } from 'node:perf_hooks';
import { LRUCache } from 'lru-cache';
import type { AttemptTracer } from './attempt-tracing.js';
import type { DeliveryAttempts } from './attempt.js';
import {
  aheadBudgetMs,
  aheadLimit,
  claimAgeMs,
  claimsToTake,
  newLane,
  noteSlot,
  paceOf,
  pendingIn,
  slotQueueToFill,
  type Lane,
} from './claim-ahead.js';
import type { DelivererDeps, DelivererState } from './deliverer-types.js';
import type { Claimed } from './delivery-claims.js';
import type { keyedLimiter } from './limiter.js';

/** How an attempt queued here ended: done (attempted, or nothing to do), or to be queued again. */
type Settled = 'done' | 'again';

/**
 * Queues attempts in the limiter's slots, at most one per delivery in this instance. A subscription's
 * queued deliveries are claimed ahead of its slots, in batches (claim-ahead.ts): the limiter bounds what
 * is in flight to the receiver, the lane what is claimed and waiting for a slot.
 */
export const attemptQueue = (
  deps: DelivererDeps,
  parts: {
    state: DelivererState;
    limiter: ReturnType<typeof keyedLimiter>;
    traced: AttemptTracer;
    attempts: Pick<
      DeliveryAttempts,
      'attemptClaimed' | 'claim' | 'claimAndAttempt' | 'releaseUnattempted' | 'recordOutcomesNow'
    >;
  },
) => {
  const { logger, settings } = deps;
  const { state, limiter, traced } = parts;
  const { attemptClaimed, claim, claimAndAttempt, releaseUnattempted, recordOutcomesNow } = parts.attempts;
  const { queued, inFlight } = state;
  const lanes = new Map<string, Lane>();
  /**
   * The pace of the subscriptions whose lanes went idle, so that the next burst is claimed ahead from its
   * start; bounded, as the subscriptions are many and most are idle.
   */
  const paces = new LRUCache<string, number>({ max: 10_000 });
  const budgetMs = aheadBudgetMs(settings);

  /** Keeps an attempt queued here until it settles, and lets a stop wait for it. */
  const track = (deliveryId: string, webhookId: string, attempt: Promise<unknown>): Promise<void> => {
    const settled: Promise<void> = attempt
      .then(() => undefined)
      .catch((error: unknown) =>
        logger.error({ err: error, subscriptionId: webhookId, deliveryId }, 'webhook attempt could not run'),
      )
      .finally(() => {
        queued.delete(deliveryId);
        inFlight.delete(settled);
      });
    inFlight.add(settled);
    return settled;
  };

  /**
   * Why a delivery claimed ahead, now in its slot, must not be attempted on that claim: the stop began
   * meanwhile, or the claim waited past the budget (a POST on a claim near its end could outlive it, and
   * another instance could take the delivery over and POST it again). Null when it may be attempted.
   */
  const notToAttempt = (claimed: Claimed): { reason: string; again: boolean } | null => {
    if (state.stopping.signal.aborted)
      return { reason: 'the service stopped before the attempt', again: false };
    const waitedMs = claimAgeMs(claimed.state.delivery.claimedAt, deps.clock());
    if (waitedMs <= budgetMs) return null;
    const { deliveryId, webhookId } = claimed.state.delivery;
    logger.warn(
      { subscriptionId: webhookId, deliveryId, waitedMs, budgetMs },
      'webhook claim waited too long for its slot; released unattempted',
    );
    return { reason: `claimed ${waitedMs} ms before its slot`, again: true };
  };

  /**
   * Gives the claim back unattempted (DeliveryAttemptInterrupted: due again at once, without counting).
   * Released on a stop, it is attempted at the next start (or by another instance) without waiting for the
   * claim time-out; released for waiting too long, it is queued here again.
   */
  const giveBack = async (tenantId: string, claimed: Claimed, why: { reason: string; again: boolean }) =>
    (await releaseUnattempted(tenantId, claimed, why.reason)) && why.again ? 'again' : 'done';

  /** Claims now (with the others taken in this turn: one commit), then waits for a slot. */
  const claimAhead = async (lane: Lane, webhookId: string, deliveryId: string): Promise<Settled> => {
    const { tenantId } = lane;
    lane.claiming += 1;
    let claimed: Claimed | null = null;
    try {
      claimed = await claim(tenantId, deliveryId);
    } finally {
      lane.claiming -= 1;
      if (claimed) lane.stocked += 1;
      else pump(webhookId, lane);
    }
    if (!claimed) return 'done';
    const inSlot = claimed;
    return limiter.run(
      webhookId,
      (release) => {
        lane.stocked -= 1;
        const refused = notToAttempt(inSlot);
        if (refused) {
          release();
          pump(webhookId, lane);
          return giveBack(tenantId, inSlot, refused);
        }
        return inLaneSlot(webhookId, lane, release, async (done) => {
          const { deliveryId } = inSlot.state.delivery;
          await traced(tenantId, deliveryId, webhookId, () => attemptClaimed(tenantId, inSlot, done));
          return 'done';
        });
      },
      { group: tenantId },
    );
  };

  /** Claims in the slot, as a slow receiver's lane does (nothing claimed ahead waits on it). */
  const claimInSlot = (lane: Lane, webhookId: string, deliveryId: string): Promise<Settled> => {
    const { tenantId } = lane;
    lane.inSlotQueue += 1;
    return limiter.run(
      webhookId,
      (release) => {
        lane.inSlotQueue -= 1;
        return inLaneSlot(webhookId, lane, release, async (done): Promise<Settled> => {
          // An attempt still waiting for a slot when the stop begins never starts.
          if (state.stopping.signal.aborted) return 'done';
          await traced(tenantId, deliveryId, webhookId, () => claimAndAttempt(tenantId, deliveryId, done));
          return 'done';
        });
      },
      { group: tenantId },
    );
  };

  /**
   * Runs an attempt in a slot of the lane, timing how long it holds the slot (the lane's pace); the slot's
   * start and its end each let the lane send more on.
   */
  const inLaneSlot = async (
    webhookId: string,
    lane: Lane,
    release: () => void,
    attempt: (release: () => void) => Promise<Settled>,
  ): Promise<Settled> => {
    const ended = noteSlot(lane, () => performance.now());
    const done = () => {
      ended();
      release();
      pump(webhookId, lane);
    };
    pump(webhookId, lane);
    try {
      return await attempt(done);
    } finally {
      done();
    }
  };

  /** Sends the lane's waiting deliveries on: a batch of claims ahead, or each into the slots' queue. */
  const pump = (webhookId: string, lane: Lane) => {
    if (state.stopping.signal.aborted) return;
    const limit = aheadLimit(settings, budgetMs, paceOf(lane, performance.now()));
    const count = limit === 0 ? slotQueueToFill(lane, settings.perSubscription) : claimsToTake(lane, limit);
    for (let taken = 0; taken < count; taken += 1) {
      const deliveryId = lane.waiting.take()!;
      const attempt =
        limit === 0 ? claimInSlot(lane, webhookId, deliveryId) : claimAhead(lane, webhookId, deliveryId);
      void track(deliveryId, webhookId, attempt).then(async () => {
        // Released for taking too long: queued again, once this instance no longer holds it as queued.
        if ((await attempt.catch(() => 'done')) === 'again') kick(lane.tenantId, deliveryId, webhookId);
      });
    }
    // The successes' outcomes waiting for company join this batch of claims: one commit for both.
    if (limit > 0 && count > 0) recordOutcomesNow();
    if (pendingIn(lane) === 0 && lane.inSlot.size === 0 && lanes.get(webhookId) === lane) {
      lanes.delete(webhookId);
      if (lane.attemptMs !== null) paces.set(webhookId, lane.attemptMs);
    }
  };

  /** Queues an attempt unless this instance already has one queued or running for the delivery. */
  const kick = (tenantId: string, deliveryId: string, webhookId: string) => {
    // Once stopping, start nothing: the stores are about to close, and what is due stays due in them for
    // the next start's sweep.
    if (queued.has(deliveryId) || state.stopping.signal.aborted) return;
    queued.add(deliveryId);
    let lane = lanes.get(webhookId);
    if (!lane) {
      lane = newLane(tenantId, paces.get(webhookId) ?? null);
      lanes.set(webhookId, lane);
    }
    lane.waiting.push(deliveryId);
    pump(webhookId, lane);
  };

  /** Whether the subscription has deliveries here not yet in a slot: a new one must not pass them. */
  const waiting = (webhookId: string): boolean => {
    const lane = lanes.get(webhookId);
    return lane !== undefined && pendingIn(lane) > 0;
  };

  /**
   * Forgets the deliveries not yet claimed, once a stop has begun: still due in the store, they are for the
   * next start's sweep (or another instance's). The claimed ones are released in their slots.
   */
  const dropWaiting = () => {
    for (const lane of lanes.values()) {
      for (let deliveryId = lane.waiting.take(); deliveryId !== undefined; deliveryId = lane.waiting.take())
        queued.delete(deliveryId);
    }
  };

  return { track, kick, waiting, dropWaiting };
};
