// A subscription's status and health at a glance: the badges of the list and of its page.
import type { WebhookHealth, WebhookSubscription } from '../../client/src/types.js';
import { When } from './ui.js';
import { outcomeText, percent } from './webhook-outcome.js';
import './webhooks.css';

export const StatusBadge = ({ subscription }: { subscription: WebhookSubscription }) => (
  <span class={`badge status-${subscription.status}`}>{subscription.status}</span>
);

/** Red, and worded, so that it is not told by its colour alone. */
export const FailingBadge = ({ health }: { health: WebhookHealth }) =>
  health.failing ? (
    <span class="badge failing" title={`${health.consecutiveFailures} failed attempts in a row`}>
      Failing
    </span>
  ) : null;

/** The last attempt, in words: when, and what the receiver said. */
export const LastDelivery = ({ health }: { health: WebhookHealth }) =>
  health.lastAttemptAt ? (
    <>
      <When at={health.lastAttemptAt} />{' '}
      <span class={health.lastAttemptStatus ?? ''}>
        {health.lastAttemptStatus === 'succeeded'
          ? 'delivered'
          : outcomeText({
              status: 'failed',
              statusCode: health.lastStatusCode,
              error: health.lastStatusCode === null ? 'nothing answered' : null,
            })}
      </span>
    </>
  ) : (
    <span class="muted">none yet</span>
  );

/** The health's figures, for the subscription's page. */
export const HealthFacts = ({ health }: { health: WebhookHealth }) => (
  <>
    <dt>Success rate</dt>
    <dd>
      {percent(health.successRate)}{' '}
      <span class="muted">
        of the last {health.attempts} {health.attempts === 1 ? 'attempt' : 'attempts'} (up to {health.window})
      </span>
    </dd>
    <dt>Last delivery</dt>
    <dd>
      <LastDelivery health={health} />
    </dd>
    <dt>Last success</dt>
    <dd>
      <When at={health.lastSuccessAt} />
    </dd>
  </>
);
