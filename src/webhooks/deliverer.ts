import { randomUUID } from 'node:crypto';
import type { Logger } from 'pino';
import { retryOnConflict } from '../core/conflicts.js';
import { handleCommand, handleCommandOn, type KnownState } from '../core/command-handler.js';
import { ConflictError, UnavailableError, VersionConflictError } from '../core/errors.js';
import type { Clock } from '../core/ids.js';
import { streamName } from '../core/streams.js';
import { everySecond } from '../core/sweeper.js';
import { lostRace, systemContextOf } from '../core/system-context.js';
import { cachedStreams } from '../eventstore/cached-streams.js';
import { canonicalJson } from '../eventstore/hash-chain.js';
import type { EventStore } from '../eventstore/port.js';
import { inStreamSpan, SpanKind } from '../observability/tracing.js';
import { platformPartition } from '../readmodels/aggregate-projection.js';
import type { ReadModelStore } from '../readmodels/port.js';
import { ownerLacksScope } from './creator.js';
import {
  deliveryDecider,
  deliveryIdFor,
  type Delivery,
  type DeliveryCommand,
  type DeliveryEvent,
  type DeliveryState,
  type Outcome,
  StaleClaimError,
  type Claimant,
} from './delivery.decider.js';
import type { ExternalEvent } from './external.js';
import { keyedLimiter } from './limiter.js';
import { dueBySubscription, firstSweep } from './sweep.js';
import { open } from './secret-box.js';
import { AttemptAbortedError, type WebhookSender } from './sender.js';
import { signatureHeaders } from './signing.js';
import {
  entryOf,
  webhooksDecider,
  webhooksStream,
  type SubscriptionsView,
  type WebhookEntry,
} from './subscription.decider.js';

export interface WebhookSettings {
  retryDelaysMs: readonly number[];
  timeoutMs: number;
  /** How long a claim may stay without an outcome before another attempt takes over (a crashed instance). */
  claimTimeoutMs: number;
  concurrency: number;
  perSubscription: number;
}

/** Why the service disabled a subscription: bounded, so it can be a metric's label. */
export type DisableReason = 'retries_exhausted' | 'owner_lacks_scope';

/** What the worker reports besides its events and logs: the metrics count it (src/observability). */
export interface WebhookObserver {
  /** An attempt's recorded outcome; `occurredAt` is the domain fact's, for the latency to a 2xx. */
  attempted(attempt: {
    ok: boolean;
    retrying: boolean;
    exhausted: boolean;
    manual: boolean;
    occurredAt: string;
  }): void;
  disabled(reason: DisableReason): void;
}

export interface DelivererDeps {
  eventStore: EventStore;
  readModels: ReadModelStore;
  sender: WebhookSender;
  secretKey: string;
  clock: Clock;
  logger: Logger;
  settings: WebhookSettings;
  deliveriesCollection: string;
  observer?: WebhookObserver;
  /** The tenants' subscriptions, read incrementally (cachedViews over subscriptionsView). */
  subscriptions: (stream: string) => Promise<SubscriptionsView>;
}

/** A slot taken for a delivery about to be scheduled: its first claim goes in the scheduling append. */
export interface Reservation {
  claim: Claimant;
  /** Attempts the delivery the scheduling append claimed, in the reserved slot. */
  start(tenantId: string, claimed: KnownState<DeliveryState>): void;
  /** Gives the slot back unused: nothing was scheduled. */
  release(): void;
}

/**
 * How far ahead the sweep looks for due retries. Each one found gets a timer for its due time, so it is
 * attempted on time rather than at the next whole-second sweep.
 */
const lookAheadMs = 2000;
/**
 * The slots one tenant may hold at once: all but one subscription's share of the overall limit, so that a
 * tenant with many hung receivers (or many test events) always leaves the other tenants some.
 */
export const tenantShare = ({ concurrency, perSubscription }: WebhookSettings): number =>
  Math.max(perSubscription, concurrency - perSubscription);

/** Opened secrets kept, by their sealed form: opening one costs a key derivation's worth of work. */
const maxOpenedSecrets = 1000;

const systemContext = systemContextOf('system:webhooks');

/**
 * Attempts deliveries: each claims its delivery, POSTs it signed and records the outcome, with bounded
 * concurrency overall and per subscription, so one slow receiver cannot stall the others.
 * - The slot is given back as soon as the receiver has answered with success. The outcome is written after
 *   that, so the next attempt's claim and this one's outcome go into one commit; the delivery stays queued
 *   in this instance until its outcome is recorded.
 * - A sweep every second attempts what is due (retries, and anything a crash left behind) and
 *   sets a timer for what falls due within the next two seconds.
 */
export const deliverer = (deps: DelivererDeps) => {
  const { eventStore, settings, logger } = deps;
  const instance = `instance:${randomUUID().slice(0, 8)}`;
  const limiter = keyedLimiter(settings.concurrency, settings.perSubscription, tenantShare(settings));
  const credentials = cachedStreams(eventStore);
  const openedSecrets = new Map<string, string>();
  /** Deliveries with an attempt queued or under way here, up to its recorded outcome. */
  const queued = new Set<string>();
  /** Every attempt of this instance, from its queueing to its recorded outcome: what a stop waits for. */
  const inFlight = new Set<Promise<void>>();
  /** Attempts waiting in this process for their due time, at most `lookAheadMs` ahead. */
  const dueTimers = new Map<string, NodeJS.Timeout>();
  let stopping = new AbortController();
  /** Cuts the attempts still in flight when a stop's deadline passes (see stop). */
  let interrupting = new AbortController();

  const secretOf = (sealed: string): string => {
    let secret = openedSecrets.get(sealed);
    if (secret === undefined) {
      secret = open(sealed, deps.secretKey);
      if (openedSecrets.size >= maxOpenedSecrets) openedSecrets.delete(openedSecrets.keys().next().value!);
      openedSecrets.set(sealed, secret);
    }
    return secret;
  };

  /** The secret a rotation replaced, while it still signs beside the new one. */
  const previousSecretOf = (entry: WebhookEntry): string | undefined =>
    entry.previousSealedSecret !== null &&
    Date.parse(entry.previousSecretExpiresAt ?? '') > deps.clock().getTime()
      ? secretOf(entry.previousSealedSecret)
      : undefined;

  /** A new claim of this instance: its id is what the attempt's outcome or release names. */
  const newClaim = (): Claimant => ({ claimedBy: instance, claimId: randomUUID() });

  /**
   * The command that follows one's own claim, on the state it left. If the stream moved since, it is
   * decided again on what the stream holds now: outcomes and releases name their claim, so the decider
   * refuses them (StaleClaimError) once another instance has taken the delivery over.
   */
  const onClaimed = async (tenantId: string, claimed: Claimed, command: DeliveryCommand) => {
    const { deliveryId } = claimed.state.delivery;
    const stream = streamName('delivery', tenantId, deliveryId);
    const context = systemContext(tenantId, deps.clock(), deliveryId);
    try {
      return await handleCommandOn(eventStore, deliveryDecider, stream, claimed, command, context);
    } catch (error) {
      if (!(error instanceof VersionConflictError)) throw error;
      return handleCommand(eventStore, deliveryDecider, stream, command, context);
    }
  };

  /**
   * Records an outcome or a release on the attempt's own claim; null, and a warning, when that claim is no
   * longer current: the attempt outlived its claim, and what it learnt belongs to no attempt in the stream.
   */
  const settle = async (
    tenantId: string,
    claimed: Claimed,
    command: Extract<DeliveryCommand, { type: 'RecordOutcome' | 'Release' }>,
  ) => {
    try {
      return await onClaimed(tenantId, claimed, command);
    } catch (error) {
      if (!(error instanceof StaleClaimError)) throw error;
      const { deliveryId, webhookId } = claimed.state.delivery;
      logger.warn(
        {
          subscriptionId: webhookId,
          deliveryId,
          claimId: error.claimId,
          currentClaimId: error.currentClaimId,
          ...(command.type === 'RecordOutcome'
            ? { ok: command.outcome.ok, status: command.outcome.statusCode }
            : { reason: command.reason }),
        },
        command.type === 'RecordOutcome'
          ? 'webhook outcome refused: claim taken over'
          : 'webhook release refused: claim taken over',
      );
      return null;
    }
  };

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
        reason: entry ? 'subscription disabled' : 'subscription deleted',
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
    let outcome: Outcome;
    try {
      outcome = await deps.sender.send(tenantId, entry.subscription.url, body, headers, interrupting.signal);
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
    // A success gives its slot back now. A failure keeps it until recorded (and the subscription disabled
    // if that was the last retry), so that a failing receiver's next delivery never slips in before that.
    if (outcome.ok) release();
    const recorded = await settle(tenantId, claimed, {
      type: 'RecordOutcome',
      claimId: claimed.state.delivery.claimId,
      outcome,
      now: deps.clock(),
      retryDelaysMs: settings.retryDelaysMs,
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

  /** Claims the delivery, then attempts it; a lost claim means another instance is on it. */
  const claimAndAttempt = async (tenantId: string, deliveryId: string, release: () => void) => {
    let claimed;
    try {
      claimed = await handleCommand(
        eventStore,
        deliveryDecider,
        streamName('delivery', tenantId, deliveryId),
        { type: 'Claim', now: deps.clock(), claimTimeoutMs: settings.claimTimeoutMs, ...newClaim() },
        systemContext(tenantId, deps.clock(), deliveryId),
      );
    } catch (error) {
      if (lostRace(error)) return;
      throw error;
    }
    if (isClaimed(claimed)) await attemptClaimed(tenantId, claimed, release);
  };

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
    if (stopping.signal.aborted) throw new UnavailableError('The service is stopping', 5);
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
        if (stopping.signal.aborted) return 'stopping' as const;
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
    if (outcome === null && interrupting.signal.aborted)
      throw new UnavailableError('The service stopped before the receiver answered', 5);
    return { deliveryId, outcome };
  };

  /** With traces on, an attempt is the CLIENT span `webhook attempt`, in the trace of what made it due. */
  const traced = <T>(tenantId: string, deliveryId: string, webhookId: string, attempt: () => Promise<T>) =>
    inStreamSpan(
      'webhook attempt',
      { eventStore, stream: streamName('delivery', tenantId, deliveryId), at: 'last' },
      { kind: SpanKind.CLIENT, attributes: { 'webhook.id': webhookId, 'webhook.delivery_id': deliveryId } },
      attempt,
    );

  /** Keeps an attempt queued here until it settles, and lets a stop wait for it. */
  const track = (deliveryId: string, webhookId: string, attempt: Promise<unknown>) => {
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
  };

  /** Queues an attempt unless this instance already has one queued or running for the delivery. */
  const kick = (tenantId: string, deliveryId: string, webhookId: string) => {
    // Once stopping, start nothing: the stores are about to close, and what is due stays due in them for
    // the next start's sweep.
    if (queued.has(deliveryId) || stopping.signal.aborted) return;
    queued.add(deliveryId);
    track(
      deliveryId,
      webhookId,
      // An attempt still waiting for a slot when the stop begins never starts.
      limiter.run(
        webhookId,
        async (release) => {
          if (stopping.signal.aborted) return;
          await traced(tenantId, deliveryId, webhookId, () => claimAndAttempt(tenantId, deliveryId, release));
        },
        { group: tenantId },
      ),
    );
  };

  /**
   * Attempts a scheduled delivery at its due time: at once when due, by a timer when due within the
   * look-ahead (the sweep comes back for later ones). The timer fires a few milliseconds late rather than
   * early, so the claim never finds the delivery not yet due.
   */
  const kickWhenDue = (delivery: Pick<Delivery, 'tenantId' | 'deliveryId' | 'webhookId' | 'dueAt'>) => {
    const { tenantId, deliveryId, webhookId } = delivery;
    const delayMs = Date.parse(delivery.dueAt ?? '') - deps.clock().getTime();
    if (!(delayMs > 0)) return kick(tenantId, deliveryId, webhookId);
    if (delayMs > lookAheadMs || dueTimers.has(deliveryId) || stopping.signal.aborted) return;
    const timer = setTimeout(() => {
      dueTimers.delete(deliveryId);
      kick(tenantId, deliveryId, webhookId);
    }, delayMs + 5);
    timer.unref();
    dueTimers.set(deliveryId, timer);
  };

  /**
   * A slot for a delivery about to be scheduled, when the subscription has one free now and nothing of it
   * waits: the scheduling append then claims the first attempt too, and the attempt starts without another.
   */
  const reserve = (tenantId: string, webhookId: string): Reservation | null => {
    if (stopping.signal.aborted) return null;
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
        track(deliveryId, webhookId, attempt);
      },
    };
  };

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

  const sweeper = everySecond(sweepDue, {
    paused: () => stopping.signal.aborted,
    onError: (error) => logger.error({ err: error }, 'webhook sweep failed'),
  });

  return {
    kick,
    reserve,
    resume,
    test,
    start: () => {
      stopping = new AbortController();
      sweeper.start();
      void sweeper.runOnce();
    },
    /**
     * Starts no attempt from now on, and waits for `drain` (the consumers that could still ask for one).
     * Attempts in flight may finish until `deadlineMs` (unbounded without it); then they are cut and
     * released (DeliveryAttemptInterrupted): due again at once, without counting.
     */
    stop: async ({ deadlineMs }: { deadlineMs?: number }, drain: () => Promise<void>) => {
      stopping.abort();
      const cut = deadlineMs === undefined ? null : setTimeout(() => interrupting.abort(), deadlineMs);
      // A sweep in flight could still kick attempts: wait for it.
      await sweeper.stop();
      for (const timer of dueTimers.values()) clearTimeout(timer);
      dueTimers.clear();
      await drain();
      while (inFlight.size > 0) await Promise.all(inFlight);
      if (cut) clearTimeout(cut);
      interrupting = new AbortController();
    },
  };
};

export type Deliverer = ReturnType<typeof deliverer>;

type Claimed = KnownState<DeliveryState> & {
  state: { status: 'present'; delivery: Delivery & { claimId: string } };
};

/** A delivery this instance holds the claim of: present, and claimed under an id it made. */
const isClaimed = (known: KnownState<DeliveryState>): known is Claimed =>
  known.state.status === 'present' &&
  known.state.delivery.status === 'claimed' &&
  known.state.delivery.claimId !== null;
