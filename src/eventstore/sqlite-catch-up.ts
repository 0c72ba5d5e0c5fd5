import type { BatchHandler, CatchUpOptions, ReadAllOptions, ReadAllPage, Subscription } from './port.js';
import { canSkip, stopLatch, type AppendSignal } from './append-signal.js';
import { skipReportMs, yieldToEventLoop } from './catch-up-pacing.js';

export interface LocalSource {
  readAll: (options: ReadAllOptions) => ReadAllPage;
  head: () => number;
  signal: AppendSignal;
  /** The longest an idle subscriber sleeps before it reads again, whatever the signal says. */
  pollMs: number;
}

/**
 * Reads pages from the caller's checkpoint on. At the end of the store it sleeps until an append in this
 * process or the polling interval, then reads from its position again: a wake-up is only a hint. Events
 * are handed over as they are read; a position moved only past events the filter skips is handed over (as
 * an empty batch) at most every `skipReportMs`, and within that time of the move.
 */
export const catchUpSubscription = (
  source: LocalSource,
  { after, filter, batchSize = 500 }: CatchUpOptions,
  handler: BatchHandler,
): Subscription => {
  const latch = stopLatch();
  const run = async (): Promise<void> => {
    let position = after;
    /** The position the handler was last given, and when. */
    let reported = after;
    let reportedAt = 0;
    const hand = async (events: Parameters<BatchHandler>[0]) => {
      await handler(events, position);
      reported = position;
      reportedAt = Date.now();
    };
    while (!latch.stopped() && !source.signal.isClosed) {
      const page = source.readAll({ after: position, maxCount: batchSize, ...(filter ? { filter } : {}) });
      // An empty page that moves the position says how far the read got past filtered-out events, as
      // EventStoreDB's checkpoints do.
      position = Math.max(position, page.lastPosition);
      if (page.events.length > 0) {
        await hand(page.events);
        await yieldToEventLoop();
        continue; // read again before sleeping: appends made while the handler ran must not be missed
      }
      // Caught up. Sleep until an append or the polling interval; a commit of only other types right after
      // the position moves it without a read. A move not yet handed over is handed over when due.
      for (;;) {
        const sinceReport = Date.now() - reportedAt;
        if (position > reported && sinceReport >= skipReportMs) {
          await hand([]);
          break; // and read again, as after any handler
        }
        const wait = position > reported ? skipReportMs - sinceReport : source.pollMs;
        const appended = await source.signal.next(wait, latch);
        if (latch.stopped()) return;
        if (canSkip(appended, position, filter?.eventTypes, source.head)) position = appended.lastPosition;
        else if (appended !== null || position === reported) break; // something to read
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
