import { randomUUID } from 'node:crypto';
import { setTimeout as pause } from 'node:timers/promises';
import type { Logger } from 'pino';
import { retryOnConflict } from '../auth/conflicts.js';
import { handleCommand, readAggregate } from '../core/command-handler.js';
import { lostRace, systemContextOf } from '../core/system-context.js';
import type { Clock } from '../core/ids.js';
import { streamName } from '../core/streams.js';
import type { RecordedEvent } from '../core/events.js';
import type { ConsumerOutcome, EventStore } from '../eventstore/port.js';
import type { Mailer } from '../mail/mailer.js';
import { platformPartition } from '../readmodels/aggregate-projection.js';
import type { ReadModelStore } from '../readmodels/port.js';
import { tenantDecider } from '../tenants/decider.js';
import { tenantStream } from '../tenants/load.js';
import type { Supervised } from '../core/supervisor.js';
import { superviseGroup } from '../eventstore/supervised-group.js';
import { everySecond } from '../core/sweeper.js';
import { inStreamSpan, SpanKind } from '../observability/tracing.js';
import { ownerLacksScope } from './creator.js';
import { keyedLimiter } from './limiter.js';
import type { Delivery, Outcome } from './delivery.js';
import { deliveryDecider, deliveryIdFor } from './delivery.js';
import { mappedDomainEventTypes, toExternal } from './external.js';
import { open } from './secret-box.js';
import { AttemptAbortedError, type WebhookSender } from './sender.js';
import { signatureHeaders } from './signing.js';
import { entryOf, foldRecorded, subscriptionsAt, webhooksDecider, webhooksStream } from './subscriptions.js';

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

export interface WebhookWorkerDeps {
  eventStore: EventStore;
  readModels: ReadModelStore;
  sender: WebhookSender;
  mailer: Mailer;
  secretKey: string;
  clock: Clock;
  logger: Logger;
  settings: WebhookSettings;
  deliveriesCollection: string;
  observer?: WebhookObserver;
}

export const projectorGroup = 'webhook-projector';
/** Sends the disable e-mail for each WebhookDisabled event, at least once, across crashes and mail outages. */
export const notifierGroup = 'webhook-disable-notifier';
/** A mail server down for a while: retries wait 1 s, 2 s, 4 s ... up to a minute, about 15 minutes in all. */
const notifyRetries = 20;
const notifyBackoffMs = (retryCount: number) => Math.min(60_000, 1000 * 2 ** retryCount);
/**
 * How far ahead the sweep looks for due retries. Each one found gets a timer for its due time, so it is
 * attempted on time rather than at the next whole-second sweep.
 */
const lookAheadMs = 2000;

const systemContext = systemContextOf('system:webhooks');

/**
 * The webhook side of the service:
 * - the projector, a persistent-subscription consumer, maps domain events to external ones and schedules a
 *   delivery per subscription that was active when the event happened;
 * - attempts claim a delivery, POST it signed, and record the outcome, with bounded concurrency overall and
 *   per subscription, so one slow receiver cannot stall the others;
 * - a node-cron sweep every second attempts what is due (retries, and anything a crash left behind) and
 *   sets a timer for what falls due within the next two seconds;
 * - the projector and the notifier run under a supervisor, which restarts them after any failure.
 */
export const webhookWorker = (deps: WebhookWorkerDeps) => {
  const { eventStore, settings, logger } = deps;
  const instance = `instance:${randomUUID().slice(0, 8)}`;
  const limiter = keyedLimiter(settings.concurrency, settings.perSubscription);
  const queued = new Set<string>();
  let consumers: Supervised[] = [];
  /** Attempts waiting in this process for their due time, at most `lookAheadMs` ahead. */
  const dueTimers = new Map<string, NodeJS.Timeout>();
  /** Aborts the notifier's wait between retries, so stopping never waits for a back-off. New per start. */
  let stopping = new AbortController();
  /** Cuts the attempts still in flight when a stop's deadline passes (see stop). */
  let interrupting = new AbortController();

  const notifyDisabled = async (tenantId: string, webhookId: string, url: string, reason: string) => {
    const { state } = await readAggregate(eventStore, tenantDecider, tenantStream(tenantId));
    if (state.status === 'absent') return;
    const { messageId } = await deps.mailer.send({
      to: state.tenant.notificationEmail,
      subject: `Webhook subscription ${webhookId} was disabled`,
      text: [
        `Your webhook subscription ${webhookId} (${url}) in tenant ${state.tenant.name} (${tenantId}) was disabled:`,
        reason,
        '',
        'Nothing more is delivered to it. Fix the receiver, then enable the subscription again with',
        `POST /v1/tenants/${tenantId}/webhooks/${webhookId}/enable {"replayMissed": true}`,
        'to receive the events it missed.',
      ].join('\n'),
    });
    await retryOnConflict(() =>
      handleCommand(
        eventStore,
        webhooksDecider,
        webhooksStream(tenantId),
        { type: 'RecordNotification', webhookId, to: state.tenant.notificationEmail, messageId },
        systemContext(tenantId, deps.clock(), null),
      ),
    );
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
        { type: 'Disable', webhookId: delivery.webhookId, reason },
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

  /**
   * The notifier's handler: one e-mail per WebhookDisabled, unless the stream already records it (a
   * redelivered event). A failure to send waits, then asks for the event again.
   */
  const notify = async (event: RecordedEvent, retryCount: number): Promise<ConsumerOutcome> => {
    const { webhookId, reason } = event.data as { webhookId: string; reason: string };
    const tenantId = event.metadata.tenantId;
    const recorded = await eventStore.readStream(webhooksStream(tenantId));
    const alreadySent = recorded.some(
      (later) =>
        later.streamVersion > event.streamVersion &&
        later.type === 'WebhookDisableNotified' &&
        (later.data as { webhookId: string }).webhookId === webhookId,
    );
    // The URL as it was when the subscription was disabled; a subscription deleted since is still reported.
    const entry = entryOf(
      foldRecorded(recorded.filter((earlier) => earlier.streamVersion <= event.streamVersion)),
      webhookId,
    );
    if (alreadySent || !entry) return { kind: 'ack' };
    try {
      await notifyDisabled(tenantId, webhookId, entry.subscription.url, reason);
      return { kind: 'ack' };
    } catch (error) {
      logger.warn(
        { err: error, subscriptionId: webhookId, retryCount },
        'webhook disable e-mail not sent; will retry',
      );
      await pause(notifyBackoffMs(retryCount), undefined, { signal: stopping.signal }).catch(() => undefined);
      return { kind: 'nack', action: 'retry', reason: (error as Error).message };
    }
  };

  /** One attempt, if this instance wins the claim; a lost claim means another instance is on it. */
  const attempt = async (tenantId: string, deliveryId: string) => {
    const stream = streamName('delivery', tenantId, deliveryId);
    const context = () => systemContext(tenantId, deps.clock(), deliveryId);
    let claimed;
    try {
      claimed = await handleCommand(
        eventStore,
        deliveryDecider,
        stream,
        { type: 'Claim', now: deps.clock(), claimTimeoutMs: settings.claimTimeoutMs, claimedBy: instance },
        context(),
      );
    } catch (error) {
      if (lostRace(error)) return;
      throw error;
    }
    if (claimed.state.status === 'absent') return;
    const delivery = claimed.state.delivery;
    const entry = entryOf(
      foldRecorded(await eventStore.readStream(webhooksStream(tenantId))),
      delivery.webhookId,
    );
    if (!entry || (entry.subscription.status !== 'active' && !delivery.manual)) {
      await handleCommand(
        eventStore,
        deliveryDecider,
        stream,
        { type: 'Cancel', reason: entry ? 'subscription disabled' : 'subscription deleted' },
        context(),
      );
      return;
    }
    // The receiver gets only what the subscription's owner may still read (creator.ts); when it may not,
    // the subscription is disabled with the reason, as after failed deliveries, and the e-mail follows.
    const lacking = await ownerLacksScope(eventStore, tenantId, entry.owner, delivery.eventType);
    if (lacking) {
      await disable(delivery, 'owner_lacks_scope', lacking);
      await handleCommand(
        eventStore,
        deliveryDecider,
        stream,
        { type: 'Cancel', reason: 'subscription disabled' },
        context(),
      );
      return;
    }
    const body = JSON.stringify(delivery.payload);
    const headers = signatureHeaders(
      delivery.payload.id,
      body,
      open(entry.sealedSecret, deps.secretKey),
      deps.clock(),
    );
    let outcome: Outcome;
    try {
      outcome = await deps.sender.send(entry.subscription.url, body, headers, interrupting.signal);
    } catch (error) {
      if (!(error instanceof AttemptAbortedError)) throw error;
      // Cut by a shutdown: released, due again at once, for the next start or another instance.
      await handleCommand(
        eventStore,
        deliveryDecider,
        stream,
        { type: 'Release', reason: error.message },
        context(),
      );
      logger.warn({ deliveryId }, 'webhook attempt cut by the shutdown deadline; released for a retry');
      return;
    }
    const recorded = await handleCommand(
      eventStore,
      deliveryDecider,
      stream,
      { type: 'RecordOutcome', outcome, now: deps.clock(), retryDelaysMs: settings.retryDelaysMs },
      context(),
    );
    const exhausted = recorded.events.some((event) => event.type === 'DeliveryRetriesExhausted');
    reportAttempt(delivery, outcome, recorded.events, exhausted);
    if (exhausted) await disable(delivery, 'retries_exhausted');
    if (recorded.state.status === 'present' && recorded.state.delivery.status === 'scheduled') {
      kickWhenDue(recorded.state.delivery);
    }
  };

  /** Every failed attempt is a warn line with stable fields (docs/operations.md#logs); all are counted. */
  const reportAttempt = (
    delivery: Delivery,
    outcome: Outcome,
    recorded: readonly { type: string; data: unknown }[],
    exhausted: boolean,
  ) => {
    const attempted = recorded.find((event) => event.type === 'DeliveryAttempted')?.data as
      { attempt: number; nextAttemptAt: string | null } | undefined;
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

  /** With traces on, an attempt is the CLIENT span `webhook attempt`, in the trace of what made it due. */
  const tracedAttempt = (tenantId: string, deliveryId: string, webhookId: string) =>
    inStreamSpan(
      'webhook attempt',
      { eventStore, stream: streamName('delivery', tenantId, deliveryId), at: 'last' },
      { kind: SpanKind.CLIENT, attributes: { 'webhook.id': webhookId, 'webhook.delivery_id': deliveryId } },
      () => attempt(tenantId, deliveryId),
    );

  /** Queues an attempt unless this instance already has one queued or running for the delivery. */
  const kick = (tenantId: string, deliveryId: string, webhookId: string) => {
    // Once stopping, start nothing: the stores are about to close, and what is due stays due in them for
    // the next start's sweep.
    if (queued.has(deliveryId) || stopping.signal.aborted) return;
    queued.add(deliveryId);
    limiter
      // An attempt still waiting for a slot when the stop begins never starts.
      .run(webhookId, async () =>
        stopping.signal.aborted ? undefined : tracedAttempt(tenantId, deliveryId, webhookId),
      )
      .catch((error: unknown) =>
        logger.error({ err: error, subscriptionId: webhookId, deliveryId }, 'webhook attempt could not run'),
      )
      .finally(() => queued.delete(deliveryId));
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

  const project = async (event: Parameters<typeof toExternal>[0]): Promise<ConsumerOutcome> => {
    const externals = toExternal(event);
    if (externals.length === 0) return { kind: 'ack' };
    const tenantId = event.metadata.tenantId;
    const entries = subscriptionsAt(await eventStore.readStream(webhooksStream(tenantId)), event.position);
    for (const external of externals) {
      for (const entry of entries.filter((candidate) =>
        candidate.subscription.events.includes(external.type),
      )) {
        const webhookId = entry.subscription.id;
        const deliveryId = await schedule(tenantId, webhookId, external, event.id);
        if (deliveryId) kick(tenantId, deliveryId, webhookId);
      }
    }
    return { kind: 'ack' };
  };

  /** Schedules one delivery; null when it was scheduled before (a redelivered domain event). */
  const schedule = async (
    tenantId: string,
    webhookId: string,
    external: ReturnType<typeof toExternal>[number],
    causationId: string,
  ): Promise<string | null> => {
    const deliveryId = deliveryIdFor(webhookId, external.id);
    try {
      const result = await handleCommand(
        eventStore,
        deliveryDecider,
        streamName('delivery', tenantId, deliveryId),
        {
          type: 'Schedule',
          identity: { deliveryId, webhookId, eventId: external.id, eventType: external.type },
          payload: external,
          now: deps.clock(),
        },
        systemContext(tenantId, deps.clock(), causationId),
      );
      return result.events.length > 0 ? deliveryId : null;
    } catch (error) {
      if (lostRace(error)) return null;
      throw error;
    }
  };

  /**
   * Resumes a delivery that was cancelled because its subscription was disabled (see Resume in
   * delivery.ts); false when there was nothing to resume.
   */
  const resume = async (tenantId: string, deliveryId: string): Promise<boolean> => {
    const stream = streamName('delivery', tenantId, deliveryId);
    try {
      const result = await handleCommand(
        eventStore,
        deliveryDecider,
        stream,
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

  /** Attempts everything due by now, from the deliveries read model. */
  const sweepDue = async () => {
    const now = deps.clock();
    const due = (status: string, field: string, before: Date) =>
      deps.readModels.list<Delivery>(deps.deliveriesCollection, {
        tenantId: platformPartition,
        filters: [
          { op: 'eq', field: 'status', value: status },
          { op: 'lte', field, value: before.toISOString() },
        ],
        sort: { field, direction: 'asc' },
        limit: 1000,
      });
    const stale = new Date(now.getTime() - settings.claimTimeoutMs);
    for (const delivery of await due('scheduled', 'dueAt', new Date(now.getTime() + lookAheadMs))) {
      kickWhenDue(delivery);
    }
    for (const delivery of await due('claimed', 'claimedAt', stale)) {
      kick(delivery.tenantId, delivery.deliveryId, delivery.webhookId);
    }
  };

  const sweeper = everySecond(sweepDue, {
    paused: () => stopping.signal.aborted,
    onError: (error) => logger.error({ err: error }, 'webhook sweep failed'),
  });

  return {
    schedule,
    kick,
    resume,
    start: () => {
      stopping = new AbortController();
      consumers = [
        superviseGroup(
          eventStore,
          projectorGroup,
          { filter: { eventTypes: mappedDomainEventTypes }, startFrom: 'start', maxRetryCount: 10 },
          ({ event }) => project(event),
          { logger },
        ),
        superviseGroup(
          eventStore,
          notifierGroup,
          { filter: { eventTypes: ['WebhookDisabled'] }, startFrom: 'start', maxRetryCount: notifyRetries },
          ({ event, retryCount }) => notify(event, retryCount),
          { logger },
        ),
      ];
      sweeper.start();
      void sweeper.runOnce();
    },
    consumers: () => consumers.map((consumer) => consumer.status()),
    /**
     * Starts no attempt from now on. Attempts in flight may finish until `deadlineMs` (unbounded without it);
     * then they are cut and released (DeliveryAttemptInterrupted): due again at once, without counting.
     */
    stop: async ({ deadlineMs }: { deadlineMs?: number } = {}) => {
      stopping.abort();
      const cut = deadlineMs === undefined ? null : setTimeout(() => interrupting.abort(), deadlineMs);
      // A sweep in flight could still kick attempts: wait for it.
      await sweeper.stop();
      for (const timer of dueTimers.values()) clearTimeout(timer);
      dueTimers.clear();
      await Promise.all(consumers.map((consumer) => consumer.stop()));
      await limiter.idle();
      if (cut) clearTimeout(cut);
      interrupting = new AbortController();
    },
  };
};

export type WebhookWorker = ReturnType<typeof webhookWorker>;
