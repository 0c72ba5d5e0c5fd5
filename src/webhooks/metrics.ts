import type { Metrics } from '../observability/metrics.js';
import type { WebhookObserver } from './worker.js';

/**
 * An attempt as a bounded label: `succeeded`; `retrying` (failed, another attempt is scheduled);
 * `exhausted` (failed, no retry left: the subscription is disabled); `failed` (a manual redelivery, which
 * neither retries nor disables).
 */
export const attemptOutcome = (attempt: Parameters<WebhookObserver['attempted']>[0]): string =>
  attempt.ok ? 'succeeded' : attempt.retrying ? 'retrying' : attempt.exhausted ? 'exhausted' : 'failed';

export const webhookMetrics = (
  metrics: Pick<Metrics, 'webhookAttempts' | 'webhookLatency' | 'webhookDisabled'>,
  now = Date.now,
): WebhookObserver => ({
  attempted: (attempt) => {
    metrics.webhookAttempts.inc({ outcome: attemptOutcome(attempt) });
    const since = Date.parse(attempt.occurredAt);
    if (attempt.ok && Number.isFinite(since)) {
      metrics.webhookLatency.observe(Math.max(0, (now() - since) / 1000));
    }
  },
  disabled: (reason) => metrics.webhookDisabled.inc({ reason }),
});
