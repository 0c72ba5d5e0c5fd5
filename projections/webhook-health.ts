import type { Projection } from '../src/readmodels/projection.js';
import type { DeliveryEvent } from '../src/webhooks/delivery.decider.js';
import type { WebhookEvent, WebhookSubscription } from '../src/webhooks/subscription.decider.js';
import { textFields } from '../src/readmodels/fields.js';

/** How many of a subscription's latest attempts its success rate covers. */
export const healthWindow = 100;

/** Failed attempts in a row from which a subscription is shown as failing. */
export const failingAfter = 3;

/**
 * A subscription's recent attempts, kept as they happen, so that its health is one document read rather
 * than a scan of its delivery log.
 */
export interface WebhookHealthRecord {
  id: string;
  /** The outcomes of the latest attempts, oldest first: `s` succeeded, `f` failed; at most healthWindow. */
  recent: string;
  lastAttemptAt: string | null;
  lastAttemptStatus: 'succeeded' | 'failed' | null;
  lastStatusCode: number | null;
  lastSuccessAt: string | null;
  consecutiveFailures: number;
}

type Attempted = Extract<DeliveryEvent, { type: 'DeliveryAttempted' }>['data'];

const fresh = (id: string): WebhookHealthRecord => ({
  id,
  recent: '',
  lastAttemptAt: null,
  lastAttemptStatus: null,
  lastStatusCode: null,
  lastSuccessAt: null,
  consecutiveFailures: 0,
});

const afterAttempt = (doc: WebhookHealthRecord, attempt: Attempted, at: string): WebhookHealthRecord => ({
  ...doc,
  recent: `${doc.recent}${attempt.ok ? 's' : 'f'}`.slice(-healthWindow),
  lastAttemptAt: at,
  lastAttemptStatus: attempt.ok ? 'succeeded' : 'failed',
  lastStatusCode: attempt.statusCode,
  lastSuccessAt: attempt.ok ? at : doc.lastSuccessAt,
  consecutiveFailures: attempt.ok ? 0 : doc.consecutiveFailures + 1,
});

/** Every attempt counts, tests and redeliveries too: health is about the receiver, whatever was sent. */
export const webhookHealthProjection: Projection<WebhookHealthRecord> = {
  name: 'webhook_health',
  collection: { name: 'webhook_health', fields: textFields('lastAttemptAt'), indexes: [] },
  eventTypes: ['WebhookSubscribed', 'WebhookDeleted', 'DeliveryAttempted'],
  creates: ['WebhookSubscribed'],
  documentKey: (event) => ({
    tenantId: event.metadata.tenantId,
    id: (event.data as WebhookEvent['data'] | Attempted).webhookId,
  }),
  evolve: (doc, event) => {
    const webhookId = (event.data as { webhookId: string }).webhookId;
    if (event.type === 'WebhookSubscribed') return fresh(webhookId);
    if (event.type === 'WebhookDeleted') return null;
    // An attempt that finished after its subscription was deleted has nothing left to count towards.
    return doc && afterAttempt(doc, event.data as Attempted, event.metadata.occurredAt);
  },
};

export interface WebhookHealth {
  window: number;
  attempts: number;
  successRate: number | null;
  lastAttemptAt: string | null;
  lastAttemptStatus: 'succeeded' | 'failed' | null;
  lastStatusCode: number | null;
  lastSuccessAt: string | null;
  consecutiveFailures: number;
  failing: boolean;
}

/**
 * A subscription's health as the API shows it. Failing: its last `failingAfter` attempts all failed, or it
 * was disabled (its retries ran out, or its owner lost a scope), so nothing reaches the receiver.
 */
export const healthOf = (
  record: WebhookHealthRecord | null,
  status: WebhookSubscription['status'],
): WebhookHealth => {
  const doc = record ?? fresh('');
  const succeeded = [...doc.recent].filter((outcome) => outcome === 's').length;
  return {
    window: healthWindow,
    attempts: doc.recent.length,
    successRate: doc.recent.length === 0 ? null : Math.round((succeeded / doc.recent.length) * 1000) / 1000,
    lastAttemptAt: doc.lastAttemptAt,
    lastAttemptStatus: doc.lastAttemptStatus,
    lastStatusCode: doc.lastStatusCode,
    lastSuccessAt: doc.lastSuccessAt,
    consecutiveFailures: doc.consecutiveFailures,
    failing: status === 'disabled' || doc.consecutiveFailures >= failingAfter,
  };
};
