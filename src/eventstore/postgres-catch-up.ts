import type { BatchHandler, CatchUpOptions, ReadAllOptions, ReadAllPage, Subscription } from './port.js';
import { stopLatch, type AppendSignal } from './append-signal.js';
import { skipReportMs, yieldToEventLoop } from './sqlite-catch-up.js';
import { canSkipCommit } from './postgres-listener.js';

/** A page of the PostgreSQL store, and whether committed events still wait below the horizon. */
export interface HorizonPage extends ReadAllPage {
  /**
   * True when events are visible above the safe head: they committed, but an older transaction still
   * runs, so they are not read yet. The reader looks again soon rather than in a polling interval, since
   * that older transaction may commit no event and so send no wake-up.
   */
  behind: boolean;
}

export interface RemoteSource {
  readPage: (options: ReadAllOptions) => Promise<HorizonPage>;
  signal: AppendSignal;
  /** The longest an idle subscriber sleeps before it reads again, whatever the signal says. */
  pollMs: number;
}

/** While events wait behind the horizon, a reader looks again after this, doubling up to behindMaxMs. */
const behindFirstMs = 2;
const behindMaxMs = 100;

/**
 * The catch-up subscription of the PostgreSQL store, as on the embedded one (sqlite-catch-up.ts): pages
 * from the caller's checkpoint, handed over as read; at the end, a sleep until a wake-up (an append by any
 * process, through LISTEN) or the polling interval, then a read from the position again, unless the
 * wake-up was a commit right after the position of only types it does not read. A position moved only
 * past events the filter skips is handed over (as an empty batch) at most every `skipReportMs`.
 */
export const remoteCatchUp = (
  source: RemoteSource,
  { after, filter, batchSize = 500 }: CatchUpOptions,
  handler: BatchHandler,
): Subscription => {
  const latch = stopLatch();
  const run = async (): Promise<void> => {
    let position = after;
    let reported = after;
    let reportedAt = 0;
    let behindMs = behindFirstMs;
    const hand = async (events: Parameters<BatchHandler>[0]) => {
      await handler(events, position);
      reported = position;
      reportedAt = Date.now();
    };
    while (!latch.stopped() && !source.signal.isClosed) {
      const page = await source.readPage({
        after: position,
        maxCount: batchSize,
        ...(filter ? { filter } : {}),
      });
      position = Math.max(position, page.lastPosition);
      if (page.events.length > 0) {
        await hand(page.events);
        await yieldToEventLoop();
        continue; // read again before sleeping: appends made while the handler ran must not be missed
      }
      const idleMs = page.behind ? behindMs : source.pollMs;
      behindMs = page.behind ? Math.min(behindMaxMs, behindMs * 2) : behindFirstMs;
      for (;;) {
        const sinceReport = Date.now() - reportedAt;
        const unreported = position > reported;
        if (unreported && sinceReport >= skipReportMs) {
          await hand([]);
          break; // and read again, as after any handler
        }
        const untilReport = unreported ? skipReportMs - sinceReport : Infinity;
        const appended = await source.signal.next(Math.min(idleMs, untilReport), latch);
        if (latch.stopped()) return;
        // A commit of only other types right after the position moves it without a read.
        if (canSkipCommit(appended, position, filter?.eventTypes)) {
          position = Math.max(position, appended.lastPosition);
          continue;
        }
        // A wake-up or the end of the idle time: read. The report falling due first: hand it over.
        if (appended !== null || idleMs <= untilReport) break;
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
