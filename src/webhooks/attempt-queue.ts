import type { DelivererDeps, DelivererState } from './deliverer-types.js';
import type { AttemptTracer } from './attempt-tracing.js';
import type { keyedLimiter } from './limiter.js';

/** Queues attempts in the limiter's slots, at most one per delivery in this instance. */
export const attemptQueue = (
  deps: DelivererDeps,
  parts: {
    state: DelivererState;
    limiter: ReturnType<typeof keyedLimiter>;
    traced: AttemptTracer;
    claimAndAttempt: (tenantId: string, deliveryId: string, release: () => void) => Promise<void>;
  },
) => {
  const { logger } = deps;
  const { state, limiter, traced, claimAndAttempt } = parts;
  const { queued, inFlight } = state;

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
    if (queued.has(deliveryId) || state.stopping.signal.aborted) return;
    queued.add(deliveryId);
    track(
      deliveryId,
      webhookId,
      // An attempt still waiting for a slot when the stop begins never starts.
      limiter.run(
        webhookId,
        async (release) => {
          if (state.stopping.signal.aborted) return;
          await traced(tenantId, deliveryId, webhookId, () => claimAndAttempt(tenantId, deliveryId, release));
        },
        { group: tenantId },
      ),
    );
  };

  return { track, kick };
};
