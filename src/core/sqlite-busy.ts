import { StoreBusyError } from './errors.js';

/**
 * Another process on the same SQLite file holding its write lock (a writer in a long transaction, or one
 * frozen by SIGSTOP in the middle of one). better-sqlite3 is synchronous: SQLite's own busy handler waits
 * inside the call, holding this process's event loop. So every connection of the service waits only
 * `sqliteBusyTimeoutMs` inside SQLite, and the writers retry after that with timers (`whenFree`), which
 * leaves the event loop to the other requests meanwhile. docs/operations.md, "A busy store".
 */

/** The busy_timeout of the service's SQLite connections once open: the longest one call blocks the event loop. */
export const sqliteBusyTimeoutMs = 50;

/** While a file is being opened and its schema made, a start waits as long as before: nothing runs yet. */
export const sqliteOpeningBusyTimeoutMs = 5_000;

/** How long a write keeps trying before it answers 503 (StoreBusyError). */
export const busyBudgetMs = 3_000;

/** SQLITE_BUSY and SQLITE_LOCKED, with their extended codes (SQLITE_BUSY_SNAPSHOT, …). */
export const isSqliteBusy = (error: unknown): boolean => {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'string' && /^SQLITE_(BUSY|LOCKED)/.test(code);
};

/** The pause before the n-th retry (0-based): 5 ms doubling to 100 ms. */
export const busyPauseMs = (retry: number): number => Math.min(100, 5 * 2 ** retry);

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * Runs a synchronous SQLite write, again after a pause while the file is busy, until `deadline` (epoch ms);
 * then throws StoreBusyError (a 503 with Retry-After, and a store failure to the consumers).
 */
export const whenFree = async <T>(write: () => T, deadline = Date.now() + busyBudgetMs): Promise<T> => {
  for (let retry = 0; ; retry += 1) {
    try {
      return write();
    } catch (error) {
      if (!isSqliteBusy(error)) throw error;
      if (Date.now() >= deadline) throw StoreBusyError.after(error);
    }
    await pause(busyPauseMs(retry));
  }
};
