import { setTimeout as pause } from 'node:timers/promises';
import type { Logger } from 'pino';
import { retryOnConflict } from '../core/conflicts.js';
import { handleCommand, readAggregate } from '../core/command-handler.js';
import { systemContextOf } from '../core/system-context.js';
import type { RecordedEvent } from '../core/events.js';
import type { Clock } from '../core/ids.js';
import type { ConsumerOutcome, EventStore } from '../eventstore/port.js';
import type { Mailer } from '../mail/mailer.js';
import { tenantDecider } from '../tenants/decider.js';
import { tenantStream } from '../tenants/load.js';
import {
  entryOf,
  foldRecorded,
  webhooksDecider,
  webhooksStream,
  type SubscriptionsView,
} from './subscription.decider.js';

/** Sends the disable e-mail for each WebhookDisabled event, at least once, across crashes and mail outages. */
export const notifierGroup = 'webhook-disable-notifier';
/** A mail server down for a while: retries wait 1 s, 2 s, 4 s ... up to a minute, about 15 minutes in all. */
export const notifyRetries = 20;
const notifyBackoffMs = (retryCount: number) => Math.min(60_000, 1000 * 2 ** retryCount);

const webhooksContext = systemContextOf('system:webhooks');

export interface NotifierDeps {
  eventStore: EventStore;
  /** The tenants' subscriptions, read incrementally (the worker's one view, see worker.ts). */
  subscriptions: (stream: string) => Promise<SubscriptionsView>;
  mailer: Mailer;
  clock: Clock;
  logger: Logger;
}

/**
 * The notifier's handler: one e-mail per WebhookDisabled to the tenant's notification address, unless the
 * stream already records it (a redelivered event). A failure to send waits, then asks for the event again;
 * `stopping` cuts that wait short.
 */
export const disableNotifier = (deps: NotifierDeps) => {
  const { eventStore, logger } = deps;

  const send = async (tenantId: string, webhookId: string, url: string, reason: string) => {
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
        'to receive what it missed: the delivery that disabled it (sent once more), the deliveries the disable',
        'cancelled, and the events since the disable.',
      ].join('\n'),
    });
    await retryOnConflict(() =>
      handleCommand(
        eventStore,
        webhooksDecider,
        webhooksStream(tenantId),
        { type: 'RecordNotification', webhookId, to: state.tenant.notificationEmail, messageId },
        webhooksContext(tenantId, deps.clock(), null),
      ),
    );
  };

  return async (
    event: RecordedEvent,
    retryCount: number,
    stopping: AbortSignal,
  ): Promise<ConsumerOutcome> => {
    const { webhookId, reason } = event.data as { webhookId: string; reason: string };
    const tenantId = event.metadata.tenantId;
    const { recorded } = await deps.subscriptions(webhooksStream(tenantId));
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
      await send(tenantId, webhookId, entry.subscription.url, reason);
      return { kind: 'ack' };
    } catch (error) {
      logger.warn(
        { err: error, subscriptionId: webhookId, retryCount },
        'webhook disable e-mail not sent; will retry',
      );
      await pause(notifyBackoffMs(retryCount), undefined, { signal: stopping }).catch(() => undefined);
      return { kind: 'nack', action: 'retry', reason: (error as Error).message };
    }
  };
};
