import { randomUUID } from 'node:crypto';
import { cachedStreams } from '../eventstore/cached-streams.js';
import { deliveryAttempts } from './attempt.js';
import { attemptQueue } from './attempt-queue.js';
import { attemptTracer } from './attempt-tracing.js';
import type { DelivererDeps, DelivererState, Reservation, WebhookSettings } from './deliverer-types.js';
import { deliveryClaims, isClaimed } from './delivery-claims.js';
import { subscriptionDisabler } from './disable.js';
import { dueSweeper } from './due-sweep.js';
import { dueKicker } from './due-timers.js';
import { keyedLimiter } from './limiter.js';
import { deliveryResumer } from './resume.js';
import { secretCache } from './secret-cache.js';
import { testSender } from './test-send.js';

export type {
  DelivererDeps,
  DisableReason,
  Reservation,
  WebhookObserver,
  WebhookSettings,
} from './deliverer-types.js';

/**
 * The slots one tenant may hold at once: all but one subscription's share of the overall limit, so that a
 * tenant with many hung receivers (or many test events) always leaves the other tenants some.
 */
export const tenantShare = ({ concurrency, perSubscription }: WebhookSettings): number =>
  Math.max(perSubscription, concurrency - perSubscription);

/**
 * Attempts deliveries: each claims its delivery, POSTs it signed and records the outcome, with bounded
 * concurrency overall and per subscription, so one slow receiver cannot stall the others.
 * - A subscription with a backlog has its queued deliveries claimed ahead of its slots, in batches that
 *   share a commit (claim-ahead.ts, attempt-queue.ts): a freed slot POSTs an already-claimed one at once.
 * - The slot is given back as soon as the receiver has answered with success. The outcome is written after
 *   that, so the next attempt's claim and this one's outcome go into one commit; the delivery stays queued
 *   in this instance until its outcome is recorded.
 * - A sweep every second attempts what is due (retries, and anything a crash left behind) and
 *   sets a timer for what falls due within the next two seconds.
 * Its parts (claims, attempts, queue, timers, sweep, test sends, resume, disable, secrets, tracing) are
 * modules of their own beside this one; what they share is `state`.
 */
export const deliverer = (deps: DelivererDeps) => {
  const { eventStore, settings } = deps;
  const instance = `instance:${randomUUID().slice(0, 8)}`;
  const limiter = keyedLimiter(settings.concurrency, settings.perSubscription, tenantShare(settings));
  const credentials = cachedStreams(eventStore);
  const state: DelivererState = {
    stopping: new AbortController(),
    interrupting: new AbortController(),
    queued: new Set<string>(),
    inFlight: new Set<Promise<void>>(),
    dueTimers: new Map<string, NodeJS.Timeout>(),
  };
  const { queued, inFlight, dueTimers } = state;

  const claims = deliveryClaims(deps, instance);
  const { newClaim } = claims;
  const traced = attemptTracer(eventStore);
  const attempts = deliveryAttempts(deps, {
    state,
    claims,
    secrets: secretCache(deps),
    credentials,
    disable: subscriptionDisabler(deps),
    kickWhenDue: (delivery) => kickWhenDue(delivery),
  });
  const { attemptClaimed } = attempts;
  const { track, kick, waiting, dropWaiting } = attemptQueue(deps, { state, limiter, traced, attempts });
  const kickWhenDue = dueKicker(deps, state, kick);
  const test = testSender(deps, { state, limiter, credentials, newClaim, traced, attemptClaimed });
  const resume = deliveryResumer(deps, kick);

  /**
   * A slot for a delivery about to be scheduled, when the subscription has one free now and nothing of it
   * waits: the scheduling append then claims the first attempt too, and the attempt starts without another.
   */
  const reserve = (tenantId: string, webhookId: string): Reservation | null => {
    if (state.stopping.signal.aborted || waiting(webhookId)) return null;
    const release = limiter.tryAcquire(webhookId, tenantId);
    if (!release) return null;
    return {
      claim: newClaim(),
      release,
      start: (tenantId, claimed) => {
        if (!isClaimed(claimed)) return release();
        const { deliveryId } = claimed.state.delivery;
        queued.add(deliveryId);
        const attempt = traced(tenantId, deliveryId, webhookId, () =>
          attemptClaimed(tenantId, claimed, release),
        ).finally(release);
        void track(deliveryId, webhookId, attempt);
      },
    };
  };

  const sweeper = dueSweeper(deps, { state, kick, kickWhenDue });

  return {
    kick,
    reserve,
    resume,
    test,
    start: () => {
      state.stopping = new AbortController();
      sweeper.start();
      void sweeper.runOnce();
    },
    /**
     * Starts no attempt from now on, and waits for `drain` (the consumers that could still ask for one).
     * Attempts in flight may finish until `deadlineMs` (unbounded without it); then they are cut and
     * released (DeliveryAttemptInterrupted): due again at once, without counting.
     */
    stop: async ({ deadlineMs }: { deadlineMs?: number }, drain: () => Promise<void>) => {
      state.stopping.abort();
      dropWaiting();
      const cut = deadlineMs === undefined ? null : setTimeout(() => state.interrupting.abort(), deadlineMs);
      // A sweep in flight could still kick attempts: wait for it.
      await sweeper.stop();
      for (const timer of dueTimers.values()) clearTimeout(timer);
      dueTimers.clear();
      await drain();
      while (inFlight.size > 0) await Promise.all(inFlight);
      if (cut) clearTimeout(cut);
      state.interrupting = new AbortController();
    },
  };
};

export type Deliverer = ReturnType<typeof deliverer>;
