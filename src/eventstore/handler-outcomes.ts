import type { RecordedEvent } from '../core/events.js';
import { isStoreFailure } from '../core/store-failures.js';
import type { ConsumerOutcome, PersistentHandler } from './port.js';

/**
 * A persistent handler's outcome, the same on every adapter: a throw is a nack(retry). But a store that
 * fails under the handler (a full disk, a lost connection) is no fault of the event: the consumer fails
 * instead, and its supervisor starts it again from the checkpoint once the store answers, rather than
 * burning the event's retries down to a park.
 */
export const handlerOutcome = async (
  handler: PersistentHandler,
  event: RecordedEvent,
  retryCount: number,
): Promise<ConsumerOutcome> => {
  try {
    return await handler({ event, retryCount });
  } catch (error) {
    if (isStoreFailure(error)) throw error;
    return { kind: 'nack', action: 'retry', reason: error instanceof Error ? error.message : String(error) };
  }
};

/**
 * The outcomes of handlers run side by side. A store failure in one fails the consumer, but only once all
 * have returned, so that none is still at work when the consumer starts again and delivers its event anew.
 */
export const allOrFirstFailure = async <T>(running: Promise<T>[]): Promise<T[]> => {
  const settled = await Promise.allSettled(running);
  const failure = settled.find((result) => result.status === 'rejected');
  if (failure) throw failure.reason;
  return settled.map((result) => (result as PromiseFulfilledResult<T>).value);
};

/** Where an adapter records what became of a delivery that did not simply succeed. */
export interface OutcomeRecorder {
  /** The event goes to the handler again with this count, recorded first so that a restart resumes it. */
  retry: (retryCount: number) => Promise<unknown>;
  park: (reason: string, retryCount: number) => Promise<unknown>;
}

export interface Delivery {
  handler: PersistentHandler;
  event: RecordedEvent;
  /** The count the event was delivered with first. */
  retryCount: number;
  maxRetryCount: number;
  /** True once the consumer is stopping. */
  stopping: () => boolean;
}

/** What became of a delivery: acknowledged (after `retryCount` retries), parked, or left to the next consumer. */
export type Settled = { kind: 'acknowledged'; retryCount: number } | { kind: 'parked' } | { kind: 'left' };

/**
 * One event to its end, the same on every adapter that keeps its own groups: an ack settles it; a
 * nack(retry) delivers it again, its count raised, while it has retries left, and parks it after; a
 * nack(park) parks it at once. Stopping leaves a retry to the next consumer (its count is kept), never
 * burnt down to a park. `first` is the first delivery's outcome, when the caller has it already.
 */
export const settleDelivery = async (
  { handler, event, retryCount, maxRetryCount, stopping }: Delivery,
  recorder: OutcomeRecorder,
  first?: ConsumerOutcome,
): Promise<Settled> => {
  let count = retryCount;
  let outcome = first ?? (await handlerOutcome(handler, event, count));
  for (;;) {
    if (outcome.kind === 'ack') return { kind: 'acknowledged', retryCount: count };
    if (outcome.action === 'retry' && stopping()) return { kind: 'left' };
    if (outcome.action === 'park' || count >= maxRetryCount) {
      await recorder.park(outcome.reason, count);
      return { kind: 'parked' };
    }
    count += 1;
    await recorder.retry(count);
    outcome = await handlerOutcome(handler, event, count);
  }
};

/** A parked event delivered again once, by a replay: acknowledged, or parked anew whatever the nack says. */
export const settleReplay = (
  handler: PersistentHandler,
  event: RecordedEvent,
  park: OutcomeRecorder['park'],
): Promise<Settled> =>
  settleDelivery(
    { handler, event, retryCount: 0, maxRetryCount: 0, stopping: () => false },
    { retry: () => Promise.reject(new Error('a replay is never retried')), park },
  );
