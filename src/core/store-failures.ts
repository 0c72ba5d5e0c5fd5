import { UnavailableError } from './errors.js';

/**
 * Whether an error is the store failing (a full disk, a database that does not answer, a swap under a
 * commit) rather than refusing what was written. Consumers fail on such errors and are started again by
 * their supervisor; only other errors count against an event (a retry, a park).
 */

/** SQLite result codes (and their extended forms) that say the database, not the statement, failed. */
const storeSqliteCodes = /^SQLITE_(FULL|READONLY|BUSY|LOCKED|IOERR|CANTOPEN|NOMEM|PROTOCOL|INTERRUPT|NOLFS)/;
const storeSystemCodes = new Set(['ENOSPC', 'EROFS', 'EIO', 'EBUSY', 'EMFILE', 'ENFILE', 'EAGAIN']);
/** The driver's names for a server that cannot be reached or is going away. */
const storeMongoNames =
  /^Mongo(Network|NetworkTimeout|ServerSelection|TopologyClosed|NotConnected|PoolClosed|PoolCleared|WriteConcern)Error$/;
/** Server codes of the same: shutdown, step-down, not primary, host unreachable, time-outs, disk full. */
const storeMongoCodes = new Set([6, 7, 64, 89, 91, 189, 262, 9001, 10107, 11600, 11602, 13435, 13436, 14031]);
const storeMongoLabels = ['RetryableWriteError', 'ResetPool', 'TransientTransactionError'];

/** One error's own word that the store failed, whatever was being written. */
const saysStoreFailed = (error: Error): boolean => {
  // A swap under a commit, or another process's lease taken over a stalled one's commit (sqlite-leases.ts).
  if (error.name === 'CollectionSwappedError' || error.name === 'LeaseLostError') return true;
  if (error instanceof UnavailableError) return true;
  const { code, errorLabels } = error as { code?: unknown; errorLabels?: unknown };
  if (typeof code === 'string' && (storeSqliteCodes.test(code) || storeSystemCodes.has(code))) return true;
  if (!error.name.startsWith('Mongo')) return false;
  return (
    storeMongoNames.test(error.name) ||
    (typeof code === 'number' && storeMongoCodes.has(code)) ||
    (Array.isArray(errorLabels) && errorLabels.some((label) => storeMongoLabels.includes(String(label))))
  );
};

/** True when the error, or one of its causes, is the store failing rather than refusing this event. */
export const isStoreFailure = (error: unknown): boolean => {
  let current: unknown = error;
  for (let depth = 0; current instanceof Error && depth < 5; depth += 1) {
    if (saysStoreFailed(current)) return true;
    current = current.cause;
  }
  return false;
};

/**
 * A backend's `orUnavailable`: the failures that say its server cannot be reached become `unreachable(error)`,
 * a 503 on the request path and a store failure to the consumers; anything else is a bug to report as such.
 */
export const unavailableWhen =
  <Failure extends Error>(
    isConnectionFailure: (error: unknown) => error is Failure,
    unreachable: (error: Failure) => UnavailableError,
  ) =>
  async <T>(work: Promise<T>): Promise<T> => {
    try {
      return await work;
    } catch (error) {
      throw isConnectionFailure(error) ? unreachable(error) : error;
    }
  };
