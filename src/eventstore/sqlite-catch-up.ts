import type { BatchHandler, CatchUpOptions, ReadAllOptions, ReadAllPage, Subscription } from './port.js';
import { canSkip, stopLatch, type AppendSignal } from './append-signal.js';

export interface LocalSource {
  readAll: (options: ReadAllOptions) => ReadAllPage;
  head: () => number;
  signal: AppendSignal;
  /** The longest an idle subscriber sleeps before it reads again, whatever the signal says. */
  pollMs: number;
}

/** Yields to the event loop: a subscriber far behind must not starve timers and HTTP while it catches up. */
export const yieldToEventLoop = () => new Promise((resolve) => setImmediate(resolve));

/**
 * Reads pages from the caller's checkpoint on. At the end of the store it sleeps until an append in this
 * process or the polling interval, then reads from its position again: a wake-up is only a hint.
 */
export const catchUpSubscription = (
  source: LocalSource,
  { after, filter, batchSize = 500 }: CatchUpOptions,
  handler: BatchHandler,
): Subscription => {
  const latch = stopLatch();
  const run = async (): Promise<void> => {
    let position = after;
    while (!latch.stopped() && !source.signal.isClosed) {
      const page = source.readAll({ after: position, maxCount: batchSize, ...(filter ? { filter } : {}) });
      // An empty batch that moves the position says how far the read got past filtered-out events, as
      // EventStoreDB's checkpoints do.
      if (page.events.length > 0 || page.lastPosition > position) {
        await handler(page.events, page.lastPosition);
        position = page.lastPosition;
        await yieldToEventLoop();
        continue; // read again before sleeping: appends made while the handler ran must not be missed
      }
      const appended = await source.signal.next(source.pollMs, latch);
      if (latch.stopped()) break;
      // A commit of only other types right after our position moves it without a read; anything else reads.
      if (canSkip(appended, position, filter?.eventTypes, source.head)) {
        position = appended.lastPosition;
        await handler([], position);
      }
    }
  };
  const done = run();
  return {
    done,
    stop: async () => {
      latch.stop();
      await done.catch(() => undefined);
    },
  };
};
