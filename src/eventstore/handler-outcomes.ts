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
