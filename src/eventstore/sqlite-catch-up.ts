import type { BatchHandler, CatchUpOptions, ReadAllOptions, ReadAllPage, Subscription } from './port.js';
import { canSkip, stopLatch, type AppendSignal } from './append-signal.js';

export interface LocalSource {
  readAll: (options: ReadAllOptions) => ReadAllPage;
  head: () => number;
  signal: AppendSignal;
}

/** Reads pages from the caller's checkpoint on; at the end of the store it sleeps until the next append. */
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
      if (page.events.length > 0) {
        await handler(page.events, page.lastPosition);
        position = page.lastPosition;
        // A subscription far behind would otherwise run from promise to promise and starve timers and
        // HTTP: the service must answer health checks while it catches up.
        await new Promise((resolve) => setImmediate(resolve));
        continue; // read again before sleeping: appends made while the handler ran must not be missed
      }
      if (page.lastPosition > position) {
        // Only filtered-out events were appended: say how far the read got, as EventStoreDB's checkpoints do.
        await handler([], page.lastPosition);
        position = page.lastPosition;
        continue;
      }
      if (!page.isEnd) continue;
      // Caught up: sleep until an append, and move on without a read while appends hold nothing for us.
      for (;;) {
        const appended = await Promise.race([source.signal.next(), latch.whenStopped.then(() => null)]);
        if (latch.stopped() || !canSkip(appended, filter?.eventTypes, source.head)) break;
        position = appended.lastPosition;
        await handler([], position);
        if (source.head() !== position) break; // appended again while the handler ran: read it
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
