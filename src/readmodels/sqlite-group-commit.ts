import type Database from 'better-sqlite3';
import { asError } from '../core/errors.js';
import { whenFree } from '../core/sqlite-busy.js';

interface Pending<Request> {
  request: Request;
  resolve: () => void;
  reject: (error: Error) => void;
}

/**
 * Group commit for the read models, as the event store has for appends: the writes asked for while the
 * event loop runs one phase (each projection runner's batch and checkpoint) go into one transaction, so that
 * a webhook delivery's three or four projections cost one commit rather than one each. Each write runs in a
 * savepoint of its own: one that fails (a poison event) is rolled back alone and rejected, and the runner
 * finds the event to blame as before. A failure of the whole transaction (a full disk, a busy file past its
 * time) rejects every write of the batch. Nothing resolves before the commit.
 */
export const groupCommit = <Request>(db: Database.Database, write: (request: Request) => void) => {
  let pending: Pending<Request>[] = [];
  const writeOne = db.transaction(write);
  const writeAll = db.transaction((batch: readonly Pending<Request>[]) =>
    batch.map(({ request }): Error | null => {
      try {
        writeOne(request);
        return null;
      } catch (error) {
        // Without a transaction SQLite rolled the batch back whole (an I/O error): it fails as one.
        if (!db.inTransaction) throw error;
        return asError(error);
      }
    }),
  );

  // Batches commit one after the other, in the order they formed.
  let committing: Promise<void> = Promise.resolve();
  const flush = () => {
    const batch = pending;
    pending = [];
    committing = committing.then(async () => {
      let failures: (Error | null)[];
      try {
        failures = await whenFree(() => writeAll.immediate(batch));
      } catch (error) {
        for (const { reject } of batch) reject(asError(error));
        return;
      }
      batch.forEach(({ resolve, reject }, index) => {
        const failure = failures[index];
        if (failure) reject(failure);
        else resolve();
      });
    });
  };

  return (request: Request): Promise<void> =>
    new Promise((resolve, reject) => {
      pending.push({ request, resolve, reject });
      if (pending.length === 1) setImmediate(flush);
    });
};
