import type { RecordedEvent } from '../core/events.js';
import type { BatchHandler, CatchUpOptions, ReadAllOptions, ReadAllPage, Subscription } from './port.js';
import { latchedSubscription, type Appended, type AppendSignal, type Unread } from './append-signal.js';
import { skipReportMs, yieldToEventLoop } from './catch-up-pacing.js';

/**
 * A page of a store as read, its events not decoded yet (a reader may ask for the next page first, so that
 * the server reads it while this process decodes this one), and whether committed events still wait below
 * the horizon.
 */
export interface SourcePage extends Omit<ReadAllPage, 'events'> {
  /** How many events the page holds. */
  size: number;
  /** The page's events, decoded from their rows on each call. */
  decode: () => RecordedEvent[];
  /**
   * True when events are visible above the safe head: they committed, but an older transaction still
   * runs, so they are not read yet (PostgreSQL only). The reader looks again soon rather than in a polling
   * interval, since that older transaction may commit no event and so send no wake-up.
   */
  behind: boolean;
}

/** What the engine needs of a store: pages, wake-ups, and whether a wake-up can be taken as read. */
export interface CatchUpSource {
  readPage: (options: ReadAllOptions) => Promise<SourcePage>;
  /**
   * Whether the next page is asked for as soon as a full one arrives, before this one is handed over. Worth
   * it only where a read runs elsewhere (a server) while this process works.
   */
  readsAhead: boolean;
  signal: AppendSignal;
  /** The longest an idle subscriber sleeps before it reads again, whatever the signal says. */
  pollMs: number;
  /**
   * Where a subscriber at `position` that reads `eventTypes` stands after a wake-up (null: a wake-up that
   * says nothing of what was appended), read nothing: past commits it need not read, and whether to read.
   */
  skipUnread: (
    appended: Appended | null,
    position: number,
    eventTypes: readonly string[] | undefined,
  ) => Unread;
}

/** While events wait behind the horizon, a reader looks again after this, doubling up to behindMaxMs. */
const behindFirstMs = 2;
const behindMaxMs = 100;

/**
 * A promise of `work` that never rejects: it gives a function that returns the result or throws the
 * failure. For work started now and awaited later, whose failure must not count as unhandled meanwhile.
 */
const settledLater = <T>(work: Promise<T>): Promise<() => T> =>
  work.then(
    (value) => () => value,
    (error: unknown) => () => {
      throw error;
    },
  );

/**
 * The catch-up subscription of every store that keeps its own log (docs/architecture.md#event-store-port):
 * pages from the caller's checkpoint, handed over as read; at the end, a sleep until a wake-up or the
 * polling interval, then a read from the position again (a wake-up is only a hint), unless the wake-up
 * was a commit right after the position of only types it does not read. A position moved only past events
 * the filter skips is handed over (as an empty batch) at most every `skipReportMs`, and within that time
 * of the move.
 *
 * With `readsAhead`, while a backlog lasts the next page is asked for as soon as a full one arrives. A
 * read-ahead that finds nothing is not trusted for sleeping, since appends made while the handler ran may
 * have committed after it: the reader reads again once the handler is done.
 */
export const catchUp = (
  source: CatchUpSource,
  { after, filter, batchSize = 500 }: CatchUpOptions,
  handler: BatchHandler,
): Subscription =>
  latchedSubscription(async (latch) => {
    let position = after;
    /** The position the handler was last given, and when. */
    let reported = after;
    let reportedAt = 0;
    let behindMs = behindFirstMs;
    const hand = async (events: RecordedEvent[]) => {
      await handler(events, position);
      reported = position;
      reportedAt = Date.now();
    };
    /** The wake-ups sent before the last read began: one sent while it was in flight reached no sleeper. */
    let seen = source.signal.notified;
    const read = (from: number) => {
      seen = source.signal.notified;
      return settledLater(
        source.readPage({ after: from, maxCount: batchSize, ...(filter ? { filter } : {}) }),
      );
    };
    let ahead: Promise<() => SourcePage> | null = null;
    try {
      while (!latch.stopped() && !source.signal.isClosed) {
        const readAhead = ahead !== null;
        const page = (await (ahead ?? read(position)))();
        ahead = null;
        // An empty page that moves the position says how far the read got past filtered-out events, as
        // EventStoreDB's checkpoints do.
        position = Math.max(position, page.lastPosition);
        if (page.size > 0) {
          if (source.readsAhead && !page.isEnd) ahead = read(position);
          await hand(page.decode());
          await yieldToEventLoop();
          continue; // read again before sleeping: appends made while the handler ran must not be missed
        }
        if (readAhead) continue; // begun before the handler ran, so the same holds
        // A commit announced while the read was in flight may lie past its snapshot: read again, not sleep.
        if (source.signal.wokeSince(seen, filter?.eventTypes, position)) continue;
        const idleMs = page.behind ? behindMs : source.pollMs;
        behindMs = page.behind ? Math.min(behindMaxMs, behindMs * 2) : behindFirstMs;
        // Wake-ups taken as read do not put the next read off: it comes when the idle time is up, whatever
        // was skipped meanwhile (a skip may stop short of a commit that was never heard of).
        const idleUntil = Date.now() + idleMs;
        for (;;) {
          const now = Date.now();
          const sinceReport = now - reportedAt;
          const unreported = position > reported;
          if (unreported && sinceReport >= skipReportMs) {
            await hand([]);
            break; // and read again, as after any handler
          }
          const untilReport = unreported ? skipReportMs - sinceReport : Infinity;
          const untilIdle = Math.max(0, idleUntil - now);
          const appended = await source.signal.next(Math.min(untilIdle, untilReport), latch);
          if (latch.stopped()) return;
          // Commits of only other types that follow on from the position move it without a read.
          const unread = source.skipUnread(appended, position, filter?.eventTypes);
          position = Math.max(position, unread.position);
          if (!unread.mustRead) continue;
          // A wake-up or the end of the idle time: read. The report falling due first: hand it over.
          if (appended !== null || untilIdle <= untilReport) break;
        }
      }
    } finally {
      await ahead; // a read-ahead no one will use: the pool may close once it is back
    }
  });
