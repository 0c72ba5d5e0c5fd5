import { createHash } from 'node:crypto';
import type { Decider, DomainEvent } from '../core/decider.js';
import { ConflictError, NotFoundError } from '../core/errors.js';
import type { ExternalEvent, ExternalEventType } from './external.js';

/**
 * One external event on its way to one subscription. Every step is an event on the delivery's own stream,
 * and each attempt starts with a claim appended at the version its claimant read: with several instances
 * running, exactly one of them makes each attempt.
 */
export const deliveryIdFor = (webhookId: string, externalEventId: string): string =>
  `d_${createHash('sha256').update(`${webhookId}\n${externalEventId}`).digest('hex').slice(0, 26)}`;

export interface Outcome {
  ok: boolean;
  statusCode: number | null;
  durationMs: number;
  error: string | null;
  /**
   * The start of the receiver's answer (sender.ts `responseBodyLimit`), when it answered; absent on
   * attempts recorded before it was kept.
   */
  responseBody?: string;
}

/**
 * The request an attempt sent, as the delivery log shows it: the URL and the headers that carry the
 * signatures (never the secret). The body is the delivery's payload, in canonical JSON.
 */
export interface SentRequest {
  url: string;
  headers: Record<string, string>;
}

type Identity = { deliveryId: string; webhookId: string; eventId: string; eventType: ExternalEventType };

/**
 * Who holds an attempt: the instance, and the id of this one claim of it. Outcomes and releases name the
 * claim id, so that an attempt which outlived its claim (another instance took the delivery over) can
 * never settle the claim that replaced it. `claimTimeoutMs` is how long the claimant may stay silent
 * before another instance may take the delivery over: the claimant's own setting (its receivers' time-out
 * and a margin), recorded with the claim so that an instance configured otherwise respects it.
 */
export interface Claimant {
  claimedBy: string;
  claimId: string;
  claimTimeoutMs: number;
}

/**
 * An outcome or a release for a claim that is not the delivery's current one: its attempt outlived the
 * claim time-out and another instance took the delivery over (or it was settled or cancelled meanwhile).
 */
export class StaleClaimError extends ConflictError {
  constructor(
    readonly deliveryId: string,
    readonly claimId: string,
    readonly currentClaimId: string | null,
  ) {
    super(
      `Claim ${claimId} of delivery ${deliveryId} is not the current one (${currentClaimId ?? 'none is'})`,
    );
  }
}

export type DeliveryEvent =
  | DomainEvent<'DeliveryScheduled', Identity & { payload: ExternalEvent; dueAt: string; test?: true }>
  /**
   * `claimId` is null on claims recorded before claims had ids (upcasters.ts): no outcome matches them.
   * `claimTimeoutMs` is absent on claims recorded before it was: the instance that looks takes its own.
   */
  | DomainEvent<
      'DeliveryAttemptClaimed',
      {
        deliveryId: string;
        attempt: number;
        claimedBy: string;
        claimId: string | null;
        claimTimeoutMs?: number;
      }
    >
  /** `request` and `test` are absent on attempts recorded before they were kept (and `test` on real ones). */
  | DomainEvent<
      'DeliveryAttempted',
      Identity &
        Outcome & { attempt: number; nextAttemptAt: string | null; request?: SentRequest; test?: true }
    >
  | DomainEvent<'DeliveryAttemptInterrupted', { deliveryId: string; attempt: number; reason: string }>
  | DomainEvent<'DeliverySucceeded', { deliveryId: string; attempt: number }>
  | DomainEvent<'DeliveryRetriesExhausted', { deliveryId: string; webhookId: string; attempts: number }>
  | DomainEvent<'DeliveryCancelled', { deliveryId: string; reason: string }>
  | DomainEvent<'DeliveryRedeliveryRequested', { deliveryId: string }>
  | DomainEvent<'DeliveryResumed', { deliveryId: string }>;

export const deliveryEventTypes: readonly DeliveryEvent['type'][] = [
  'DeliveryScheduled',
  'DeliveryAttemptClaimed',
  'DeliveryAttempted',
  'DeliveryAttemptInterrupted',
  'DeliverySucceeded',
  'DeliveryRetriesExhausted',
  'DeliveryCancelled',
  'DeliveryRedeliveryRequested',
  'DeliveryResumed',
];

export interface Delivery extends Identity {
  id: string;
  tenantId: string;
  status: 'scheduled' | 'claimed' | 'succeeded' | 'failed' | 'cancelled';
  /** Attempts made so far. */
  attempts: number;
  /** When the next attempt is due (scheduled), or when the current claim was taken (claimed). */
  dueAt: string | null;
  claimedAt: string | null;
  /** The current claim's id while claimed; null otherwise (and for a claim recorded before ids). */
  claimId: string | null;
  /** The current claim's time-out, as its claimant recorded it; null otherwise (and on older claims). */
  claimTimeoutMs: number | null;
  /**
   * A redelivery is one manual attempt: its failure neither retries nor disables the subscription. A test
   * delivery (`POST …/test`) is manual from the start.
   */
  manual: boolean;
  /** Sent by `POST …/webhooks/{id}/test`: an example event, not one of the tenant's. */
  test: boolean;
  payload: ExternalEvent;
  updatedAt: string;
}

export type DeliveryState = { status: 'absent' } | { status: 'present'; delivery: Delivery };

export type DeliveryCommand =
  | {
      type: 'Schedule';
      identity: Identity;
      payload: ExternalEvent;
      now: Date;
      /** The instance that makes the first attempt at once: its claim goes in the same append. */
      claim?: Claimant;
      /** A test delivery: one attempt, made whatever the subscription's state. */
      test?: true;
    }
  | ({ type: 'Claim'; now: Date } & Claimant)
  | {
      type: 'RecordOutcome';
      claimId: string;
      outcome: Outcome;
      now: Date;
      retryDelaysMs: readonly number[];
      request?: SentRequest;
    }
  | { type: 'Release'; claimId: string; reason: string }
  | { type: 'Cancel'; reason: string }
  | { type: 'Redeliver' }
  | { type: 'Resume' };

const present = (state: DeliveryState): Delivery => {
  if (state.status === 'absent') throw new NotFoundError('No such delivery');
  return state.delivery;
};

/** Settles an attempt only on the claim it was made under, as the CV worker fences its runs. */
const currentClaim = (delivery: Delivery, claimId: string): Delivery => {
  if (delivery.status !== 'claimed' || delivery.claimId !== claimId)
    throw new StaleClaimError(
      delivery.deliveryId,
      claimId,
      delivery.status === 'claimed' ? delivery.claimId : null,
    );
  return delivery;
};

/**
 * Due now: scheduled and due, or claimed by an instance that has been silent past its claim's time-out
 * (`claimTimeoutMs`, the looking instance's own, for a claim that recorded none).
 */
export const isDue = (delivery: Delivery, now: Date, claimTimeoutMs: number): boolean =>
  (delivery.status === 'scheduled' && Date.parse(delivery.dueAt ?? '') <= now.getTime()) ||
  (delivery.status === 'claimed' &&
    Date.parse(delivery.claimedAt ?? '') + (delivery.claimTimeoutMs ?? claimTimeoutMs) <= now.getTime());

const decide = (command: DeliveryCommand, state: DeliveryState): DeliveryEvent[] => {
  switch (command.type) {
    case 'Schedule': {
      // The id is derived from the subscription and the event: a redelivered domain event schedules nothing.
      if (state.status === 'present') return [];
      const scheduled: DeliveryEvent = {
        type: 'DeliveryScheduled',
        data: {
          ...command.identity,
          payload: command.payload,
          dueAt: command.now.toISOString(),
          ...(command.test ? { test: true as const } : {}),
        },
      };
      if (command.claim === undefined) return [scheduled];
      const { deliveryId } = command.identity;
      return [
        scheduled,
        { type: 'DeliveryAttemptClaimed', data: { deliveryId, attempt: 1, ...command.claim } },
      ];
    }
    case 'Claim': {
      const delivery = present(state);
      if (!isDue(delivery, command.now, command.claimTimeoutMs))
        throw new ConflictError('The delivery is not due');
      return [
        {
          type: 'DeliveryAttemptClaimed',
          data: {
            deliveryId: delivery.deliveryId,
            attempt: delivery.attempts + 1,
            claimedBy: command.claimedBy,
            claimId: command.claimId,
            claimTimeoutMs: command.claimTimeoutMs,
          },
        },
      ];
    }
    case 'RecordOutcome': {
      const delivery = currentClaim(present(state), command.claimId);
      const attempt = delivery.attempts + 1;
      const { deliveryId, webhookId, eventId, eventType } = delivery;
      const delay = command.retryDelaysMs[attempt - 1];
      const retry = !command.outcome.ok && !delivery.manual && delay !== undefined;
      const attempted: DeliveryEvent = {
        type: 'DeliveryAttempted',
        data: {
          deliveryId,
          webhookId,
          eventId,
          eventType,
          attempt,
          ...command.outcome,
          nextAttemptAt: retry ? new Date(command.now.getTime() + delay).toISOString() : null,
          ...(command.request ? { request: command.request } : {}),
          ...(delivery.test ? { test: true as const } : {}),
        },
      };
      if (command.outcome.ok)
        return [attempted, { type: 'DeliverySucceeded', data: { deliveryId, attempt } }];
      if (retry || delivery.manual) return [attempted];
      return [
        attempted,
        { type: 'DeliveryRetriesExhausted', data: { deliveryId, webhookId, attempts: attempt } },
      ];
    }
    case 'Release': {
      // The attempt was cut by a shutdown, not failed by the receiver: it is due again at once and does not
      // count, so it neither uses up a retry nor can disable the subscription.
      const delivery = currentClaim(present(state), command.claimId);
      return [
        {
          type: 'DeliveryAttemptInterrupted',
          data: { deliveryId: delivery.deliveryId, attempt: delivery.attempts + 1, reason: command.reason },
        },
      ];
    }
    case 'Cancel': {
      const delivery = present(state);
      return delivery.status === 'succeeded' || delivery.status === 'cancelled'
        ? []
        : [{ type: 'DeliveryCancelled', data: { deliveryId: delivery.deliveryId, reason: command.reason } }];
    }
    case 'Redeliver': {
      const delivery = present(state);
      if (delivery.status === 'claimed')
        throw new ConflictError('An attempt of this delivery is in progress');
      return [{ type: 'DeliveryRedeliveryRequested', data: { deliveryId: delivery.deliveryId } }];
    }
    case 'Resume': {
      // A delivery cancelled because its subscription was disabled picks up where it stopped: the attempt
      // count and the rest of the retry schedule carry on. Anything else has nothing to resume.
      const delivery = present(state);
      return delivery.status === 'cancelled'
        ? [{ type: 'DeliveryResumed', data: { deliveryId: delivery.deliveryId } }]
        : [];
    }
  }
};

/**
 * A redelivery of a settled delivery is one manual attempt. One asked for while the delivery still waits
 * for an automatic retry only brings that retry forward: its failure must go on with the schedule (and
 * disable the subscription in the end), not end the delivery after one attempt.
 */
const redeliveryIsManual = (delivery: Delivery): boolean =>
  delivery.manual || delivery.status !== 'scheduled';

const evolve: Decider<DeliveryState, DeliveryCommand, DeliveryEvent>['evolve'] = (state, event) => {
  const at = event.metadata.occurredAt;
  if (event.type === 'DeliveryScheduled') {
    const { payload, dueAt, test, ...identity } = event.data;
    return {
      status: 'present',
      delivery: {
        id: identity.deliveryId,
        tenantId: event.metadata.tenantId,
        ...identity,
        status: 'scheduled',
        attempts: 0,
        dueAt,
        claimedAt: null,
        claimId: null,
        claimTimeoutMs: null,
        manual: test === true,
        test: test === true,
        payload,
        updatedAt: at,
      },
    };
  }
  if (state.status === 'absent') return state;
  // Every event but a claim ends the claim there was: its id settles nothing from then on.
  const delivery = { ...state.delivery, updatedAt: at, claimId: null, claimTimeoutMs: null };
  switch (event.type) {
    case 'DeliveryAttemptClaimed':
      return {
        status: 'present',
        delivery: {
          ...delivery,
          status: 'claimed',
          claimedAt: at,
          dueAt: null,
          claimId: event.data.claimId,
          claimTimeoutMs: event.data.claimTimeoutMs ?? null,
        },
      };
    case 'DeliveryAttempted':
      return {
        status: 'present',
        delivery: {
          ...delivery,
          attempts: event.data.attempt,
          claimedAt: null,
          status: event.data.nextAttemptAt ? 'scheduled' : event.data.ok ? 'succeeded' : 'failed',
          dueAt: event.data.nextAttemptAt,
        },
      };
    case 'DeliveryAttemptInterrupted':
      return {
        status: 'present',
        delivery: { ...delivery, status: 'scheduled', claimedAt: null, dueAt: at },
      };
    case 'DeliverySucceeded':
      return { status: 'present', delivery: { ...delivery, status: 'succeeded' } };
    case 'DeliveryRetriesExhausted':
      return { status: 'present', delivery: { ...delivery, status: 'failed' } };
    case 'DeliveryCancelled':
      return { status: 'present', delivery: { ...delivery, status: 'cancelled', dueAt: null } };
    case 'DeliveryRedeliveryRequested':
      return {
        status: 'present',
        delivery: { ...delivery, status: 'scheduled', dueAt: at, manual: redeliveryIsManual(delivery) },
      };
    case 'DeliveryResumed':
      return { status: 'present', delivery: { ...delivery, status: 'scheduled', dueAt: at } };
  }
};

export const deliveryDecider: Decider<DeliveryState, DeliveryCommand, DeliveryEvent> = {
  aggregate: 'delivery',
  initialState: () => ({ status: 'absent' }),
  decide,
  evolve,
};
