import { expect } from 'chai';
import type { RecordedEvent } from '../../src/core/events.js';
import { ConflictError, NotFoundError } from '../../src/core/errors.js';
import type { ExternalEvent } from '../../src/webhooks/external.js';
import type { WebhookOwner } from '../../src/webhooks/creator.js';
import {
  deliveryDecider,
  deliveryIdFor,
  isDue,
  StaleClaimError,
  type DeliveryEvent,
  type Outcome,
} from '../../src/webhooks/delivery.decider.js';
import {
  entryOf,
  foldRecorded,
  subscriptionsAt,
  webhooksDecider,
  type WebhookCommand,
  type WebhookEvent,
} from '../../src/webhooks/subscription.decider.js';
import { deliveryAttemptClaimedV1ToV2 } from '../../src/webhooks/upcasters.js';
import { deciderSpec } from '../support/decider-spec.js';

const given = deciderSpec(deliveryDecider);

const payload: ExternalEvent = {
  id: 'evt_1',
  type: 'observation.created',
  tenantId: 't_test',
  timestamp: '2026-01-01T00:00:00.000Z',
  data: { observationId: 'o_1' },
};
const identity = {
  deliveryId: 'd_1',
  webhookId: 'w_1',
  eventId: 'evt_1',
  eventType: 'observation.created' as const,
};
const delays = [1000, 5000];
const at = (seconds: number) => new Date(Date.UTC(2026, 0, 1, 0, 0, seconds));

const scheduled: DeliveryEvent = {
  type: 'DeliveryScheduled',
  data: { ...identity, payload, dueAt: at(0).toISOString() },
};
/** A claim of instance a (every attempt of a, in these tests, under the id `claim-a`), with a 10 s time-out. */
const claimed = (attempt: number, by = 'a', claimTimeoutMs = 10_000): DeliveryEvent => ({
  type: 'DeliveryAttemptClaimed',
  data: { deliveryId: 'd_1', attempt, claimedBy: `instance:${by}`, claimId: `claim-${by}`, claimTimeoutMs },
});
const failure: Outcome = { ok: false, statusCode: 500, durationMs: 12, error: 'HTTP 500' };
const success: Outcome = { ok: true, statusCode: 204, durationMs: 8, error: null };
const attempted = (attempt: number, outcome: Outcome, nextAttemptAt: string | null): DeliveryEvent => ({
  type: 'DeliveryAttempted',
  data: { ...identity, ...outcome, attempt, nextAttemptAt },
});
const claim = (seconds: number, by = 'b', claimTimeoutMs = 10_000) =>
  ({
    type: 'Claim',
    now: at(seconds),
    claimTimeoutMs,
    claimedBy: `instance:${by}`,
    claimId: `claim-${by}`,
  }) as const;
const record = (outcome: Outcome, seconds = 10, by = 'a') =>
  ({
    type: 'RecordOutcome',
    claimId: `claim-${by}`,
    outcome,
    now: at(seconds),
    retryDelaysMs: delays,
  }) as const;

describe('the delivery decider', () => {
  it('schedules a delivery due at once', () => {
    given([])
      .when({ type: 'Schedule', identity, payload, now: at(0) })
      .then([scheduled]);
  });

  it('schedules a delivery and claims its first attempt in one append, for an instance with a slot free', () => {
    given([])
      .when({
        type: 'Schedule',
        identity,
        payload,
        now: at(0),
        claim: { claimedBy: 'instance:a', claimId: 'claim-a', claimTimeoutMs: 10_000 },
      })
      .then([scheduled, claimed(1)]);
    // A redelivered domain event: neither scheduled nor claimed again.
    given([scheduled, claimed(1)])
      .when({
        type: 'Schedule',
        identity,
        payload,
        now: at(5),
        claim: { claimedBy: 'instance:b', claimId: 'claim-b', claimTimeoutMs: 10_000 },
      })
      .then([]);
  });

  it('schedules nothing for a delivery it already has: a duplicate domain event', () => {
    given([scheduled])
      .when({ type: 'Schedule', identity, payload, now: at(5) })
      .then([]);
    given([
      scheduled,
      claimed(1),
      attempted(1, success, null),
      { type: 'DeliverySucceeded', data: { deliveryId: 'd_1', attempt: 1 } },
    ])
      .when({ type: 'Schedule', identity, payload, now: at(5) })
      .then([]);
  });

  it('derives the delivery id from the subscription and the event, so one event is one delivery per subscription', () => {
    expect(deliveryIdFor('w_1', 'evt_1'))
      .to.equal(deliveryIdFor('w_1', 'evt_1'))
      .and.match(/^d_[0-9a-f]{26}$/);
    expect(deliveryIdFor('w_1', 'evt_1')).not.to.equal(deliveryIdFor('w_2', 'evt_1'));
    expect(deliveryIdFor('w_1', 'evt_1')).not.to.equal(deliveryIdFor('w_1', 'evt_2'));
  });

  it('claims the first attempt of a due delivery', () => {
    given([scheduled])
      .when(claim(1))
      .then([claimed(1, 'b')]);
  });

  it('refuses to claim a delivery that is not due yet', () => {
    given([scheduled, claimed(1), attempted(1, failure, at(60).toISOString())])
      .when(claim(30))
      .thenThrows(ConflictError);
  });

  it('refuses to claim a delivery another instance claimed recently, and takes over a claim past its time-out', () => {
    // The claim was taken at second 1 (the event's occurredAt): it times out 10 s later.
    given([scheduled, claimed(1)])
      .when(claim(5))
      .thenThrows(ConflictError, /not due/);
    given([scheduled, claimed(1)])
      .when(claim(11))
      .then([claimed(1, 'b')]);
  });

  it("keeps a claim for its claimant's time-out, whatever the time-out of the instance that looks", () => {
    // A's receivers may take 60 s: its claim at second 1 is A's until second 71, also for a B set to 10 s.
    given([scheduled, claimed(1, 'a', 70_000)])
      .when(claim(30, 'b', 10_000))
      .thenThrows(ConflictError, /not due/);
    given([scheduled, claimed(1, 'a', 70_000)])
      .when(claim(71, 'b', 10_000))
      .then([claimed(1, 'b', 10_000)]);
    // And a claim with a short time-out is taken over after it, by an instance set to wait longer.
    given([scheduled, claimed(1, 'a', 5_000)])
      .when(claim(6, 'b', 70_000))
      .then([claimed(1, 'b', 70_000)]);
  });

  it('refuses to claim a settled delivery, and an unknown one', () => {
    given([
      scheduled,
      claimed(1),
      attempted(1, success, null),
      { type: 'DeliverySucceeded', data: { deliveryId: 'd_1', attempt: 1 } },
    ])
      .when(claim(60))
      .thenThrows(ConflictError);
    given([]).when(claim(1)).thenThrows(NotFoundError);
  });

  it('records a 2xx as the attempt and its success', () => {
    given([scheduled, claimed(1)])
      .when(record(success))
      .then([
        attempted(1, success, null),
        { type: 'DeliverySucceeded', data: { deliveryId: 'd_1', attempt: 1 } },
      ]);
  });

  it('records a failure with the next attempt due after the first delay of the schedule', () => {
    given([scheduled, claimed(1)])
      .when(record(failure, 10))
      .then([attempted(1, failure, at(11).toISOString())]);
  });

  it('uses the schedule in order: the second failure waits the second delay', () => {
    given([scheduled, claimed(1), attempted(1, failure, at(11).toISOString()), claimed(2)])
      .when(record(failure, 20))
      .then([attempted(2, failure, at(25).toISOString())]);
  });

  it('gives up after the initial attempt and every retry failed', () => {
    given([
      scheduled,
      claimed(1),
      attempted(1, failure, at(11).toISOString()),
      claimed(2),
      attempted(2, failure, at(25).toISOString()),
      claimed(3),
    ])
      .when(record(failure, 30))
      .then([
        attempted(3, failure, null),
        { type: 'DeliveryRetriesExhausted', data: { deliveryId: 'd_1', webhookId: 'w_1', attempts: 3 } },
      ]);
  });

  it('refuses an outcome without a claim', () => {
    given([scheduled]).when(record(success)).thenThrows(StaleClaimError);
    expect(new StaleClaimError('d_1', 'claim-a', null)).to.be.instanceOf(ConflictError);
  });

  describe('when an attempt outlives its claim and another instance takes the delivery over', () => {
    // A claims at second 1; its claim times out at 11; B takes the delivery over at 12.
    const takenOver = [scheduled, claimed(1, 'a'), claimed(1, 'b')];

    it("lets B take the delivery over once A's claim has timed out, under a claim of its own", () => {
      given([scheduled, claimed(1, 'a')])
        .when(claim(12, 'b'))
        .then([claimed(1, 'b')]);
      const { state } = given(takenOver);
      expect(state.status === 'present' && state.delivery).to.deep.include({
        status: 'claimed',
        claimId: 'claim-b',
      });
    });

    it("refuses A's late outcome, whatever it is, with a typed error naming both claims", () => {
      given(takenOver)
        .when(record(failure, 13, 'a'))
        .thenThrows(StaleClaimError, /claim-a.*claim-b/);
      given(takenOver)
        .when(record(success, 13, 'a'))
        .thenThrows(StaleClaimError);
    });

    it("records B's success", () => {
      given(takenOver)
        .when(record(success, 14, 'b'))
        .then([
          attempted(1, success, null),
          { type: 'DeliverySucceeded', data: { deliveryId: 'd_1', attempt: 1 } },
        ]);
    });

    it("leaves B's success standing when A's failure comes after it", () => {
      const succeeded = [
        ...takenOver,
        attempted(1, success, null),
        { type: 'DeliverySucceeded', data: { deliveryId: 'd_1', attempt: 1 } } as DeliveryEvent,
      ];
      given(succeeded)
        .when(record(failure, 15, 'a'))
        .thenThrows(StaleClaimError);
      const { state } = given(succeeded);
      expect(state.status === 'present' && state.delivery).to.deep.include({
        status: 'succeeded',
        claimId: null,
      });
    });

    it("refuses A's release (its shutdown cut it), and lets B release its own", () => {
      given(takenOver)
        .when({ type: 'Release', claimId: 'claim-a', reason: 'stopping' })
        .thenThrows(StaleClaimError);
      given(takenOver)
        .when({ type: 'Release', claimId: 'claim-b', reason: 'stopping' })
        .then([
          { type: 'DeliveryAttemptInterrupted', data: { deliveryId: 'd_1', attempt: 1, reason: 'stopping' } },
        ]);
    });

    it('refuses even an outcome on its own last retry, which would otherwise disable the subscription', () => {
      const lastRetry = [
        scheduled,
        claimed(1),
        attempted(1, failure, at(11).toISOString()),
        claimed(2),
        attempted(2, failure, at(25).toISOString()),
        claimed(3, 'a'),
        claimed(3, 'b'),
      ];
      given(lastRetry)
        .when(record(failure, 60, 'a'))
        .thenThrows(StaleClaimError);
    });
  });

  it('settles no claim recorded before claims had ids, and lets it be taken over once it times out', () => {
    const legacy: DeliveryEvent = {
      type: 'DeliveryAttemptClaimed',
      data: { deliveryId: 'd_1', attempt: 1, claimedBy: 'instance:old', claimId: null },
    };
    given([scheduled, legacy]).when(record(success)).thenThrows(StaleClaimError);
    // Recorded without its time-out: the instance that looks takes its own.
    given([scheduled, legacy])
      .when(claim(10))
      .thenThrows(ConflictError, /not due/);
    given([scheduled, legacy])
      .when(claim(11))
      .then([claimed(1, 'b')]);
  });

  it('reads a claim stored before claims had ids with a null claimId, and one with an id unchanged', () => {
    const v1 = { deliveryId: 'd_1', attempt: 1, claimedBy: 'instance:old' };
    expect(deliveryAttemptClaimedV1ToV2(v1)).to.deep.equal({ ...v1, claimId: null });
    expect(deliveryAttemptClaimedV1ToV2({ ...v1, claimId: 'claim-a' })).to.deep.equal({
      ...v1,
      claimId: 'claim-a',
    });
    expect(v1).not.to.have.property('claimId');
  });

  it('lets a redelivery of a settled delivery make one attempt, whose failure neither retries nor gives up', () => {
    const settled = [
      scheduled,
      claimed(1),
      attempted(1, success, null),
      { type: 'DeliverySucceeded', data: { deliveryId: 'd_1', attempt: 1 } },
    ] as DeliveryEvent[];
    given(settled)
      .when({ type: 'Redeliver' })
      .then([{ type: 'DeliveryRedeliveryRequested', data: { deliveryId: 'd_1' } }]);
    given([...settled, { type: 'DeliveryRedeliveryRequested', data: { deliveryId: 'd_1' } }, claimed(2)])
      .when(record(failure))
      .then([attempted(2, failure, null)]);
  });

  it('schedules a test delivery claimed at once, whose failed attempt neither retries nor gives up', () => {
    const test = { ...scheduled, data: { ...scheduled.data, test: true } } as DeliveryEvent;
    given([])
      .when({
        type: 'Schedule',
        identity,
        payload,
        now: at(0),
        claim: { claimedBy: 'instance:a', claimId: 'claim-a', claimTimeoutMs: 10_000 },
        test: true,
      })
      .then([test, claimed(1)]);
    const { state } = given([test, claimed(1)]);
    expect(state.status === 'present' && state.delivery).to.deep.include({ test: true, manual: true });
    // Its attempt says it was a test, so the log can mark it.
    const testAttempt = attempted(1, failure, null);
    given([test, claimed(1)])
      .when(record(failure))
      .then([{ ...testAttempt, data: { ...testAttempt.data, test: true } } as DeliveryEvent]);
  });

  it('keeps the retries of a delivery redelivered while it waits for one: the attempt comes sooner, the schedule goes on', () => {
    const waiting = [scheduled, claimed(1), attempted(1, failure, at(60).toISOString())];
    const { state } = given([
      ...waiting,
      { type: 'DeliveryRedeliveryRequested', data: { deliveryId: 'd_1' } },
    ]);
    expect(state.status === 'present' && isDue(state.delivery, at(10), 10_000)).to.equal(true);
    given([...waiting, { type: 'DeliveryRedeliveryRequested', data: { deliveryId: 'd_1' } }, claimed(2)])
      .when(record(failure, 20))
      .then([attempted(2, failure, at(25).toISOString())]);
  });

  it('refuses a redelivery while an attempt is in progress', () => {
    given([scheduled, claimed(1)])
      .when({ type: 'Redeliver' })
      .thenThrows(ConflictError);
  });

  it('cancels a pending delivery, and leaves a settled one alone', () => {
    given([scheduled])
      .when({ type: 'Cancel', reason: 'subscription disabled' })
      .then([{ type: 'DeliveryCancelled', data: { deliveryId: 'd_1', reason: 'subscription disabled' } }]);
    given([
      scheduled,
      claimed(1),
      attempted(1, success, null),
      { type: 'DeliverySucceeded', data: { deliveryId: 'd_1', attempt: 1 } },
    ])
      .when({ type: 'Cancel', reason: 'subscription disabled' })
      .then([]);
  });

  it('resumes a delivery its disabled subscription cancelled, going on with its attempts and schedule', () => {
    const cancelled: DeliveryEvent[] = [
      scheduled,
      claimed(1),
      attempted(1, failure, at(11).toISOString()),
      claimed(2),
      { type: 'DeliveryCancelled', data: { deliveryId: 'd_1', reason: 'subscription disabled' } },
    ];
    given(cancelled)
      .when({ type: 'Resume' })
      .then([{ type: 'DeliveryResumed', data: { deliveryId: 'd_1' } }]);
    const resumed = [...cancelled, { type: 'DeliveryResumed', data: { deliveryId: 'd_1' } } as DeliveryEvent];
    const { state } = given(resumed);
    expect(state.status === 'present' && state.delivery).to.deep.include({
      status: 'scheduled',
      attempts: 1,
      manual: false,
    });
    given([...resumed, claimed(2)])
      .when(record(failure, 20))
      .then([attempted(2, failure, at(25).toISOString())]);
  });

  it('resumes nothing that was not cancelled', () => {
    given([scheduled]).when({ type: 'Resume' }).then([]);
    given([
      scheduled,
      claimed(1),
      attempted(1, success, null),
      { type: 'DeliverySucceeded', data: { deliveryId: 'd_1', attempt: 1 } },
    ])
      .when({ type: 'Resume' })
      .then([]);
    given([]).when({ type: 'Resume' }).thenThrows(NotFoundError);
  });

  it('folds the attempts into the state the sweep reads', () => {
    const { state } = given([scheduled, claimed(1), attempted(1, failure, at(11).toISOString())]);
    expect(state).to.deep.include({ status: 'present' });
    if (state.status !== 'present') return;
    expect(state.delivery).to.deep.include({
      status: 'scheduled',
      attempts: 1,
      dueAt: at(11).toISOString(),
      claimedAt: null,
      manual: false,
    });
    expect(isDue(state.delivery, at(10), 10_000)).to.equal(false);
    expect(isDue(state.delivery, at(11), 10_000)).to.equal(true);
  });
});

describe('the webhook subscriptions decider', () => {
  const givenSet = deciderSpec(webhooksDecider);
  const owner = { actor: 'apikey:k_1', scopes: ['webhooks:manage', 'observations:read'] } as WebhookOwner;
  const subscribed = (webhookId: string): WebhookEvent => ({
    type: 'WebhookSubscribed',
    data: {
      webhookId,
      url: 'https://hooks.test/x',
      events: ['observation.created'],
      sealedSecret: 'v1.a.b.c',
      owner,
    },
  });
  const subscribe = (webhookId: string, max = 2): WebhookCommand => ({
    type: 'Subscribe',
    webhookId,
    url: 'https://hooks.test/x',
    events: ['observation.created'],
    sealedSecret: 'v1.a.b.c',
    max,
    owner,
  });

  it('subscribes under the cap and refuses one over it', () => {
    givenSet([subscribed('w_1')])
      .when(subscribe('w_2'))
      .then([subscribed('w_2')]);
    givenSet([subscribed('w_1'), subscribed('w_2')])
      .when(subscribe('w_3'))
      .thenThrows(ConflictError, /at most 2/);
  });

  it('counts deleted subscriptions out of the cap', () => {
    givenSet([subscribed('w_1'), subscribed('w_2'), { type: 'WebhookDeleted', data: { webhookId: 'w_1' } }])
      .when(subscribe('w_3'))
      .then([subscribed('w_3')]);
  });

  it('disables once, enables only a disabled subscription, and refuses unknown ids', () => {
    const disabled: WebhookEvent = {
      type: 'WebhookDisabled',
      data: { webhookId: 'w_1', reason: 'failed 6 times' },
    };
    givenSet([subscribed('w_1')])
      .when({ type: 'Disable', webhookId: 'w_1', reason: 'failed 6 times' })
      .then([disabled]);
    givenSet([subscribed('w_1'), disabled])
      .when({ type: 'Disable', webhookId: 'w_1', reason: 'again' })
      .then([]);
    givenSet([subscribed('w_1')])
      .when({ type: 'Enable', webhookId: 'w_1', replayMissed: true, owner })
      .then([]);
    givenSet([subscribed('w_1'), disabled])
      .when({ type: 'Enable', webhookId: 'w_1', replayMissed: true, owner })
      .then([{ type: 'WebhookEnabled', data: { webhookId: 'w_1', replayMissed: true, owner } }]);
    givenSet([]).when({ type: 'Delete', webhookId: 'w_1' }).thenThrows(NotFoundError);
    givenSet([])
      .when({ type: 'Enable', webhookId: 'w_1', replayMissed: false, owner })
      .thenThrows(NotFoundError);
    for (const id of ['__proto__', 'constructor', 'toString', 'hasOwnProperty']) {
      givenSet([subscribed('w_1')])
        .when({ type: 'Delete', webhookId: id })
        .thenThrows(NotFoundError);
      givenSet([subscribed('w_1')])
        .when({ type: 'Enable', webhookId: id, replayMissed: false, owner })
        .thenThrows(NotFoundError);
    }
  });

  it('rotates the secret of a known subscription, keeping the previous one for the grace period', () => {
    const rotated: WebhookEvent = {
      type: 'WebhookSecretRotated',
      data: { webhookId: 'w_1', sealedSecret: 'v1.new', previousSecretExpiresAt: '2026-01-02T00:00:00.000Z' },
    };
    givenSet([subscribed('w_1')])
      .when({
        type: 'RotateSecret',
        webhookId: 'w_1',
        sealedSecret: 'v1.new',
        previousSecretExpiresAt: new Date('2026-01-02T00:00:00.000Z'),
      })
      .then([rotated]);
    givenSet([])
      .when({
        type: 'RotateSecret',
        webhookId: 'w_1',
        sealedSecret: 'v1.new',
        previousSecretExpiresAt: new Date(),
      })
      .thenThrows(NotFoundError);
    const { state } = givenSet([subscribed('w_1'), rotated]);
    expect(entryOf(state, 'w_1')).to.deep.include({
      sealedSecret: 'v1.new',
      previousSealedSecret: 'v1.a.b.c',
      previousSecretExpiresAt: '2026-01-02T00:00:00.000Z',
    });
  });

  it('records the delivery whose retries ran out on the disable, for a replay to send again', () => {
    givenSet([subscribed('w_1')])
      .when({ type: 'Disable', webhookId: 'w_1', reason: 'failed 6 times', deliveryId: 'd_1' })
      .then([
        { type: 'WebhookDisabled', data: { webhookId: 'w_1', reason: 'failed 6 times', deliveryId: 'd_1' } },
      ]);
    const { state } = givenSet([
      subscribed('w_1'),
      { type: 'WebhookDisabled', data: { webhookId: 'w_1', reason: 'failed 6 times', deliveryId: 'd_1' } },
    ]);
    expect(entryOf(state, 'w_1')?.disabledByDelivery).to.equal('d_1');
  });

  it('shows status, disabledReason and createdAt, and never the sealed secret, on the subscription', () => {
    const { state } = givenSet([
      subscribed('w_1'),
      { type: 'WebhookDisabled', data: { webhookId: 'w_1', reason: 'failed 6 times' } },
    ]);
    expect(state.entries.w_1!.subscription).to.deep.include({
      status: 'disabled',
      disabledReason: 'failed 6 times',
    });
    expect(state.entries.w_1!.subscription).not.to.have.property('sealedSecret');
  });

  it('knows which subscriptions were active when an event was stored, by position', () => {
    const stored = (position: number, event: WebhookEvent): RecordedEvent => ({
      id: `e${position}`,
      streamName: 'webhooks-t_test_set',
      streamVersion: position,
      position,
      ...event,
      metadata: {
        tenantId: 't_test',
        actor: 'a',
        correlationId: 'c',
        causationId: null,
        occurredAt: at(position).toISOString(),
        schemaVersion: 1,
      },
    });
    const history = [
      stored(10, subscribed('w_1')),
      stored(20, subscribed('w_2')),
      stored(30, { type: 'WebhookDisabled', data: { webhookId: 'w_1', reason: 'x' } }),
      stored(40, { type: 'WebhookEnabled', data: { webhookId: 'w_1', replayMissed: false } }),
      stored(50, { type: 'WebhookDeleted', data: { webhookId: 'w_2' } }),
    ];
    const ids = (position: number) =>
      subscriptionsAt(history, position)
        .map((entry) => entry.subscription.id)
        .sort();
    expect(ids(5)).to.deep.equal([]);
    expect(ids(15)).to.deep.equal(['w_1']);
    expect(ids(25)).to.deep.equal(['w_1', 'w_2']);
    expect(ids(35)).to.deep.equal(['w_2']);
    expect(ids(45)).to.deep.equal(['w_1', 'w_2']);
    expect(ids(55)).to.deep.equal(['w_1']);
  });

  it('knows the owner: recorded by a subscribe or an enable, or the actor of a subscribe that recorded none', () => {
    const recorded = (version: number, event: WebhookEvent, actor: string): RecordedEvent => ({
      id: `e${version}`,
      streamName: 'webhooks-t_test_set',
      streamVersion: version,
      position: version,
      ...event,
      metadata: {
        tenantId: 't_test',
        actor,
        correlationId: 'c',
        causationId: null,
        occurredAt: at(version).toISOString(),
        schemaVersion: 1,
      },
    });
    const { owner: _recorded, ...legacyData } = (subscribed('w_1') as { data: Record<string, unknown> }).data;
    const legacy = { type: 'WebhookSubscribed', data: legacyData } as WebhookEvent;
    const before = foldRecorded([recorded(0, legacy, 'user:u_1')]);
    expect(entryOf(before, 'w_1')!.owner).to.deep.equal({ actor: 'user:u_1', scopes: null });
    const takenOver = { actor: 'apikey:k_2', scopes: ['admin'] } as WebhookOwner;
    const after = foldRecorded([
      recorded(0, legacy, 'user:u_1'),
      recorded(1, { type: 'WebhookDisabled', data: { webhookId: 'w_1', reason: 'x' } }, 'system:webhooks'),
      recorded(
        2,
        { type: 'WebhookEnabled', data: { webhookId: 'w_1', replayMissed: false, owner: takenOver } },
        'apikey:k_2',
      ),
    ]);
    expect(entryOf(after, 'w_1')!.owner).to.deep.equal(takenOver);
    expect(entryOf(after, '__proto__')).to.equal(undefined);
    expect(entryOf(after, 'constructor')).to.equal(undefined);
  });
});
