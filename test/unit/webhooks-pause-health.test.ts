import { expect } from 'chai';
import { ConflictError, NotFoundError } from '../../src/core/errors.js';
import type { RecordedEvent } from '../../src/core/events.js';
import type { WebhookOwner } from '../../src/webhooks/creator.js';
import { entryOf, webhooksDecider, type WebhookEvent } from '../../src/webhooks/subscription.decider.js';
import {
  healthOf,
  webhookHealthProjection,
  type WebhookHealthRecord,
} from '../../projections/webhook-health.js';
import { deciderSpec } from '../support/decider-spec.js';

const owner = { actor: 'apikey:k_1', scopes: ['webhooks:manage', 'observations:read'] } as WebhookOwner;
const subscribed: WebhookEvent = {
  type: 'WebhookSubscribed',
  data: {
    webhookId: 'w_1',
    url: 'https://hooks.test/x',
    events: ['observation.created'],
    sealedSecret: 's',
    owner,
  },
};
const paused: WebhookEvent = { type: 'WebhookPaused', data: { webhookId: 'w_1' } };
const resumed: WebhookEvent = { type: 'WebhookResumed', data: { webhookId: 'w_1' } };
const disabled: WebhookEvent = {
  type: 'WebhookDisabled',
  data: { webhookId: 'w_1', reason: 'failed 6 times' },
};

describe('pausing and resuming a webhook subscription', () => {
  const given = deciderSpec(webhooksDecider);

  it('pauses an active subscription once, and resumes a paused one once', () => {
    given([subscribed]).when({ type: 'Pause', webhookId: 'w_1' }).then([paused]);
    given([subscribed, paused]).when({ type: 'Pause', webhookId: 'w_1' }).then([]);
    given([subscribed, paused]).when({ type: 'Resume', webhookId: 'w_1' }).then([resumed]);
    given([subscribed]).when({ type: 'Resume', webhookId: 'w_1' }).then([]);
  });

  it('shows a paused subscription as paused, and active again after the resume', () => {
    expect(entryOf(given([subscribed, paused]).state, 'w_1')?.subscription.status).to.equal('paused');
    expect(entryOf(given([subscribed, paused, resumed]).state, 'w_1')?.subscription).to.include({
      status: 'active',
      pausedAt: null,
    });
  });

  it('refuses a deleted or unknown subscription, a disabled one, and an enable that would drop the pause', () => {
    const deleted: WebhookEvent = { type: 'WebhookDeleted', data: { webhookId: 'w_1' } };
    given([subscribed, deleted]).when({ type: 'Pause', webhookId: 'w_1' }).thenThrows(NotFoundError);
    given([]).when({ type: 'Resume', webhookId: 'w_1' }).thenThrows(NotFoundError);
    given([subscribed, disabled]).when({ type: 'Pause', webhookId: 'w_1' }).thenThrows(ConflictError);
    given([subscribed, disabled]).when({ type: 'Resume', webhookId: 'w_1' }).thenThrows(ConflictError);
    given([subscribed, paused])
      .when({ type: 'Enable', webhookId: 'w_1', replayMissed: true, owner })
      .thenThrows(ConflictError, /resume/);
  });
});

describe('the health of a webhook subscription', () => {
  let position = 0;
  const recorded = (type: string, data: object): RecordedEvent =>
    ({
      id: `e_${++position}`,
      type,
      data,
      metadata: { tenantId: 't_1', occurredAt: new Date(Date.UTC(2026, 0, 1, 0, 0, position)).toISOString() },
      position,
      streamVersion: position,
    }) as unknown as RecordedEvent;
  const attempt = (ok: boolean) =>
    recorded('DeliveryAttempted', { webhookId: 'w_1', ok, statusCode: ok ? 204 : 500 });
  const fold = (events: RecordedEvent[]) =>
    events.reduce<WebhookHealthRecord | null>(
      (doc, event) => webhookHealthProjection.evolve(doc, event),
      null,
    );

  it('has no rate before any attempt, and is not failing', () => {
    expect(healthOf(fold([recorded('WebhookSubscribed', subscribed.data)]), 'active')).to.include({
      attempts: 0,
      successRate: null,
      failing: false,
    });
  });

  it('counts the rate over the window, and fails after three failures in a row', () => {
    const events = [
      recorded('WebhookSubscribed', subscribed.data),
      attempt(true),
      attempt(false),
      attempt(false),
    ];
    expect(healthOf(fold(events), 'active')).to.include({
      attempts: 3,
      successRate: 0.333,
      consecutiveFailures: 2,
      lastAttemptStatus: 'failed',
      lastStatusCode: 500,
      failing: false,
    });
    expect(healthOf(fold([...events, attempt(false)]), 'active')).to.include({ failing: true });
    expect(healthOf(fold([...events, attempt(false), attempt(true)]), 'active')).to.include({
      consecutiveFailures: 0,
      failing: false,
    });
    expect(healthOf(fold(events), 'disabled').failing).to.equal(true);
  });

  it('keeps only the latest 100 attempts in the rate', () => {
    const many = Array.from({ length: 150 }, (_, index) => attempt(index >= 100));
    const health = healthOf(fold([recorded('WebhookSubscribed', subscribed.data), ...many]), 'active');
    expect(health).to.include({ attempts: 100, successRate: 0.5 });
  });

  it('forgets a deleted subscription, and an attempt that finished after the delete', () => {
    const events = [
      recorded('WebhookSubscribed', subscribed.data),
      recorded('WebhookDeleted', { webhookId: 'w_1' }),
    ];
    expect(fold([...events, attempt(false)])).to.equal(null);
  });
});
