import type { ReadAllOptions, ReadAllPage } from './port.js';
import { canSkip, type AppendSignal } from './append-signal.js';
import type { CatchUpSource } from './catch-up-engine.js';

export interface LocalSource {
  readAll: (options: ReadAllOptions) => ReadAllPage;
  head: () => number;
  signal: AppendSignal;
  /** The longest an idle subscriber sleeps before it reads again, whatever the signal says. */
  pollMs: number;
}

/**
 * The embedded store as the catch-up engine reads it (catch-up-engine.ts). Nothing is ever behind a
 * horizon: a write transaction is visible whole at its commit. No read-ahead: a read is synchronous, on
 * this thread, so one begun before the handler would only finish before it, and hold a second page.
 */
export const localCatchUpSource = ({ readAll, head, signal, pollMs }: LocalSource): CatchUpSource => ({
  readPage: (options) => {
    const { events, ...page } = readAll(options);
    return Promise.resolve({ ...page, size: events.length, decode: () => events, behind: false });
  },
  readsAhead: false,
  signal,
  pollMs,
  // Another process may have appended since this commit: only the head says nothing came after it.
  canSkip: (appended, position, eventTypes) => canSkip(appended, position, eventTypes, head),
});
