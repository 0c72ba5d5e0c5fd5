import type Database from 'better-sqlite3';
import type { RecordedEvent } from '../core/events.js';
import type {
  ConsumerOutcome,
  EventFilter,
  EventStore,
  ParkedEvent,
  PersistentHandler,
  Subscription,
} from './port.js';
import { canSkip, stopLatch, type StopLatch } from './append-signal.js';
import { yieldToEventLoop } from './catch-up-pacing.js';
import type { LocalSource } from './sqlite-catch-up.js';
import { toRecordedEvent, type EventRow } from './sqlite-rows.js';
import { allOrFirstFailure, handlerOutcome } from './handler-outcomes.js';
import { whenFree } from '../core/sqlite-busy.js';

/**
 * Consumer groups for the embedded store, kept in the store's own tables: the group's checkpoint, the
 * retry count of the event in hand, and the parked events. Each outcome is committed before the next
 * delivery, so a restart resumes exactly where the group stopped (the event in hand is delivered again).
 */
const schema = `
  CREATE TABLE IF NOT EXISTS subscription_groups (
    name            TEXT    PRIMARY KEY,
    filter          TEXT    NOT NULL,
    max_retry_count INTEGER NOT NULL,
    checkpoint      INTEGER NOT NULL
  );
  CREATE TABLE IF NOT EXISTS subscription_retries (
    group_name  TEXT    NOT NULL,
    position    INTEGER NOT NULL,
    retry_count INTEGER NOT NULL,
    PRIMARY KEY (group_name, position)
  );
  CREATE TABLE IF NOT EXISTS subscription_parked (
    group_name  TEXT    NOT NULL,
    position    INTEGER NOT NULL,
    reason      TEXT    NOT NULL,
    retry_count INTEGER NOT NULL,
    parked_at   TEXT    NOT NULL,
    replay      INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (group_name, position)
  );
`;

interface GroupRow {
  filter: string;
  max_retry_count: number;
  checkpoint: number;
}

type PersistentPart = Pick<
  EventStore,
  'ensurePersistentSubscription' | 'subscribePersistent' | 'listParked' | 'replayParked' | 'groupCheckpoint'
>;

export const persistentSubscriptions = (
  db: Database.Database,
  source: LocalSource,
  /** Throws when another process took this process's worker lease (sqlite-leases.ts): run in each commit. */
  checkFence: () => void = () => undefined,
): PersistentPart => {
  db.exec(schema);
  /** The latch of each group consumed in this process: a replay pokes it out of its sleep. */
  const latches = new Map<string, StopLatch>();

  const sql = {
    group: db.prepare('SELECT filter, max_retry_count, checkpoint FROM subscription_groups WHERE name = ?'),
    createGroup: db.prepare(
      // An existing group keeps its checkpoint but takes the current filter and retry limit: a release that
      // maps more event types must see them in groups created by earlier releases.
      `INSERT INTO subscription_groups (name, filter, max_retry_count, checkpoint) VALUES (?, ?, ?, ?)
       ON CONFLICT (name) DO UPDATE SET filter = excluded.filter, max_retry_count = excluded.max_retry_count`,
    ),
    moveCheckpoint: db.prepare(
      'UPDATE subscription_groups SET checkpoint = max(checkpoint, ?) WHERE name = ?',
    ),
    retryCount: db.prepare(
      'SELECT retry_count FROM subscription_retries WHERE group_name = ? AND position = ?',
    ),
    setRetryCount: db.prepare(
      'INSERT OR REPLACE INTO subscription_retries (group_name, position, retry_count) VALUES (?, ?, ?)',
    ),
    clearRetries: db.prepare('DELETE FROM subscription_retries WHERE group_name = ? AND position = ?'),
    park: db.prepare(
      `INSERT OR REPLACE INTO subscription_parked (group_name, position, reason, retry_count, parked_at, replay)
       VALUES (?, ?, ?, ?, ?, 0)`,
    ),
    unpark: db.prepare('DELETE FROM subscription_parked WHERE group_name = ? AND position = ?'),
    nextReplay: db.prepare(
      `SELECT e.* FROM subscription_parked p JOIN events e ON e.position = p.position
       WHERE p.group_name = ? AND p.replay = 1 ORDER BY p.position LIMIT 1`,
    ),
    parked: db.prepare(
      `SELECT e.*, p.reason, p.retry_count, p.parked_at FROM subscription_parked p
       JOIN events e ON e.position = p.position WHERE p.group_name = ? ORDER BY p.position`,
    ),
    markReplay: db.prepare('UPDATE subscription_parked SET replay = 1 WHERE group_name = ?'),
    head: db.prepare('SELECT coalesce(max(position), 0) AS head FROM events'),
  };

  /** Records an outcome; returns the retry count to deliver again with, or null when the event is settled. */
  const settle = db.transaction(
    (
      group: string,
      maxRetryCount: number,
      event: RecordedEvent,
      retryCount: number,
      outcome: ConsumerOutcome,
    ) => {
      checkFence();
      const park = (reason: string) =>
        sql.park.run(group, event.position, reason, retryCount, new Date().toISOString());
      if (outcome.kind === 'nack' && outcome.action === 'retry' && retryCount < maxRetryCount) {
        sql.setRetryCount.run(group, event.position, retryCount + 1);
        return retryCount + 1;
      }
      if (outcome.kind === 'nack') park(outcome.reason);
      sql.clearRetries.run(group, event.position);
      sql.moveCheckpoint.run(event.position, group);
      return null;
    },
  );

  const settleReplay = db.transaction((group: string, event: RecordedEvent, outcome: ConsumerOutcome) => {
    checkFence();
    if (outcome.kind === 'ack') sql.unpark.run(group, event.position);
    else sql.park.run(group, event.position, outcome.reason, 0, new Date().toISOString());
  });
  /** The group's checkpoint moved, in a write transaction of its own behind the fence. */
  const moveCheckpoint = db.transaction((group: string, position: number) => {
    checkFence();
    sql.moveCheckpoint.run(position, group);
  });

  const consume = async (
    group: string,
    handler: PersistentHandler,
    latch: StopLatch,
    concurrency: number,
  ) => {
    const stopped = () => latch.stopped();
    const row = sql.group.get(group) as GroupRow | undefined;
    if (!row) throw new Error(`The persistent subscription group "${group}" does not exist`);
    const filter = JSON.parse(row.filter) as EventFilter;
    // How far reads got past events the filter skips. It is persisted only now and then: re-reading such
    // positions after a restart delivers nothing, and a write on every append of other kinds of events is not.
    let scanned = 0;
    while (!stopped() && !source.signal.isClosed) {
      const replay = sql.nextReplay.get(group) as EventRow | undefined;
      if (replay) {
        const event = toRecordedEvent(replay);
        const outcome = await handlerOutcome(handler, event, 0);
        await whenFree(() => settleReplay.immediate(group, event, outcome));
        continue;
      }
      const { checkpoint } = sql.group.get(group) as GroupRow;
      const page = source.readAll({ after: Math.max(checkpoint, scanned), maxCount: 100, filter });
      // Plain acknowledgements move the checkpoint once per page rather than once per event: after a crash
      // the page is delivered again, which at-least-once consumers are built for.
      let acknowledged = 0;
      const saveAcknowledged = async () => {
        const upTo = acknowledged;
        acknowledged = 0;
        if (upTo > 0) await whenFree(() => moveCheckpoint.immediate(group, upTo));
      };
      // Up to `concurrency` events go to the handler at once; their outcomes are then settled in order, each
      // retried on its own, so the checkpoint never passes an event that is not settled.
      for (let start = 0; start < page.events.length; start += concurrency) {
        const chunk = page.events.slice(start, start + concurrency);
        const stored = chunk.map(
          (event) => sql.retryCount.get(group, event.position) as { retry_count: number } | undefined,
        );
        const firstOutcomes = await allOrFirstFailure(
          chunk.map((event, index) => handlerOutcome(handler, event, stored[index]?.retry_count ?? 0)),
        );
        for (const [index, event] of chunk.entries()) {
          let retryCount: number | null = stored[index]?.retry_count ?? 0;
          let outcome = firstOutcomes[index]!;
          for (;;) {
            // Stopping: a retry is left for the next consumer (its count is kept), never burnt down to a park.
            if (stopped() && outcome.kind === 'nack' && outcome.action === 'retry') {
              await saveAcknowledged();
              return;
            }
            if (outcome.kind === 'ack' && !stored[index]) {
              acknowledged = event.position;
              break;
            }
            await saveAcknowledged();
            const [count, settling]: [number, ConsumerOutcome] = [retryCount, outcome];
            retryCount = await whenFree<number | null>(() =>
              settle.immediate(group, row.max_retry_count, event, count, settling),
            );
            if (retryCount === null) break;
            outcome = await handlerOutcome(handler, event, retryCount);
          }
        }
        // The chunk's outcomes are all in hand and settled: stopping delivers no further chunk.
        if (stopped()) {
          await saveAcknowledged();
          return;
        }
      }
      await saveAcknowledged();
      if (page.events.length === 0) {
        scanned = page.lastPosition;
        if (scanned - checkpoint >= 10_000) await whenFree(() => moveCheckpoint.immediate(group, scanned));
        // Caught up: sleep until an append, a replay or the polling interval, then read again; a commit of
        // only other types right after what was read moves on without a read.
        const appended = await source.signal.next(source.pollMs, latch);
        if (canSkip(appended, scanned, filter.eventTypes, source.head)) scanned = appended.lastPosition;
      } else {
        await yieldToEventLoop();
      }
    }
  };

  return {
    ensurePersistentSubscription: (group, { filter = {}, startFrom, maxRetryCount }) => {
      const start = startFrom === 'end' ? (sql.head.get() as { head: number }).head : 0;
      return whenFree(() => {
        sql.createGroup.run(group, JSON.stringify(filter), maxRetryCount, start);
      });
    },

    subscribePersistent: (group, handler, { concurrency = 1 } = {}): Subscription => {
      const latch = stopLatch();
      latches.set(group, latch);
      const done = consume(group, handler, latch, Math.max(1, concurrency)).finally(() => {
        if (latches.get(group) === latch) latches.delete(group);
      });
      return {
        done,
        stop: async () => {
          latch.stop();
          await done.catch(() => undefined);
        },
      };
    },

    listParked: (group) => {
      const rows = sql.parked.all(group) as (EventRow & {
        reason: string;
        retry_count: number;
        parked_at: string;
      })[];
      return Promise.resolve(
        rows.map((row): ParkedEvent => ({
          event: toRecordedEvent(row),
          reason: row.reason,
          retryCount: row.retry_count,
          parkedAt: row.parked_at,
        })),
      );
    },

    groupCheckpoint: (group) =>
      Promise.resolve((sql.group.get(group) as GroupRow | undefined)?.checkpoint ?? null),

    replayParked: async (group) => {
      await whenFree(() => sql.markReplay.run(group));
      latches.get(group)?.poke();
    },
  };
};
