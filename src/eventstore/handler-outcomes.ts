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

/**
 * Runs `run` over `count` items in order, at most `concurrency` at once, each started as soon as a place is
 * free rather than in chunks that wait for their slowest, while `mayStart` holds. Outcomes are taken in
 * order (`next`), as a checkpoint moves, and no item starts more than `ahead` past the next one taken.
 */
export const orderedWindow = <T>(
  count: number,
  concurrency: number,
  run: (index: number) => Promise<T>,
  { mayStart = () => true, ahead = concurrency * 4 }: { mayStart?: () => boolean; ahead?: number } = {},
) => {
  const started: Promise<T>[] = [];
  let running = 0;
  let taken = 0;
  const fill = (): void => {
    while (mayStart() && running < concurrency && started.length < Math.min(count, taken + ahead)) {
      running += 1;
      const outcome = run(started.length);
      started.push(outcome);
      const done = () => {
        running -= 1;
        fill();
      };
      outcome.then(done, done);
    }
  };
  return {
    /** Whether the next item to take was started: once `mayStart` fails, the rest never are. */
    nextStarted: (): boolean => {
      fill();
      return taken < started.length;
    },
    /** The next item's outcome, in order; call only when `nextStarted`. */
    next: (): Promise<T> => started[taken++]!,
    /** Every outcome started, settled: nothing is still at work once it resolves. */
    allSettled: () => Promise.allSettled(started),
  };
};
