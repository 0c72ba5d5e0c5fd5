import type { ReadAllOptions, ReadAllPage } from './port.js';
import type { Appended, AppendSignal, CommitJournal, Unread } from './append-signal.js';
import type { CatchUpSource } from './catch-up-engine.js';

export interface LocalSource {
  readAll: (options: ReadAllOptions) => ReadAllPage;
  signal: AppendSignal;
  /** This process's recent commits, which tell a woken subscriber whether it has anything to read. */
  journal: CommitJournal;
  /** The longest an idle subscriber sleeps before it reads again, whatever the signal says. */
  pollMs: number;
}

/**
 * The embedded store as the catch-up engine reads it (catch-up-engine.ts). Nothing is ever behind a
 * horizon: a write transaction is visible whole at its commit. No read-ahead: a read is synchronous, on
 * this thread, so one begun before the handler would only finish before it, and hold a second page.
 */
export const localCatchUpSource = ({ readAll, signal, journal, pollMs }: LocalSource): CatchUpSource => ({
  readPage: (options) => {
    const { events, ...page } = readAll(options);
    return Promise.resolve({ ...page, size: events.length, decode: () => events, behind: false });
  },
  readsAhead: false,
  signal,
  pollMs,
  skipUnread: (appended, position, eventTypes) => skipUnread(journal, appended, position, eventTypes),
});

/**
 * After a wake-up: past this process's commits of other types, without a read. A wake-up that says nothing
 * of what was appended (another process wrote, the polling interval ran out, a poke) means: read.
 */
export const skipUnread = (
  journal: CommitJournal,
  appended: Appended | null,
  position: number,
  eventTypes: readonly string[] | undefined,
): Unread => (appended === null ? { position, mustRead: true } : journal.skip(position, eventTypes));
