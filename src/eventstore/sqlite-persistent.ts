import type Database from 'better-sqlite3';
import type { EventFilter, EventStore, ParkedEvent } from './port.js';
import { consumerLatches, type GroupConsumer } from './consumer-latches.js';
import { yieldToEventLoop } from './catch-up-pacing.js';
import { skipUnread, type LocalSource } from './sqlite-catch-up.js';
import { toRecordedEvent, type EventRow } from './event-rows.js';
import { handlerOutcome, orderedWindow, settleDelivery, settleReplay } from './handler-outcomes.js';
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
    retryCounts: db.prepare(
      `SELECT position, retry_count FROM subscription_retries
       WHERE group_name = ? AND position BETWEEN ? AND ?`,
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

  /** An event delivered again: its count first, so that a restart resumes it. */
  const recordRetry = db.transaction((group: string, position: number, retryCount: number) => {
    checkFence();
    sql.setRetryCount.run(group, position, retryCount);
  });
  /** An event settled after retries or parked: its count goes, and the checkpoint moves past it. */
  const settled = db.transaction(
    (group: string, position: number, parked: { reason: string; retryCount: number } | null) => {
      checkFence();
      if (parked) sql.park.run(group, position, parked.reason, parked.retryCount, new Date().toISOString());
      sql.clearRetries.run(group, position);
      sql.moveCheckpoint.run(position, group);
    },
  );
  const settleReplayed = db.transaction(
    (group: string, position: number, parked: { reason: string } | null) => {
      checkFence();
      if (parked) sql.park.run(group, position, parked.reason, 0, new Date().toISOString());
      else sql.unpark.run(group, position);
    },
  );
  /** The group's checkpoint moved, in a write transaction of its own behind the fence. */
  const moveCheckpoint = db.transaction((group: string, position: number) => {
    checkFence();
    sql.moveCheckpoint.run(position, group);
  });

  /**
   * How often each event was delivered before: 0 unless a retry of it was recorded. One read for a chunk
   * (positions ascending), not one per event: nearly every chunk has none.
   */
  const storedRetryCounts = (group: string, positions: readonly number[]): number[] => {
    const rows = sql.retryCounts.all(group, positions[0], positions.at(-1)) as {
      position: number;
      retry_count: number;
    }[];
    const counts = new Map(rows.map((row) => [row.position, row.retry_count]));
    return positions.map((position) => counts.get(position) ?? 0);
  };

  const consume: GroupConsumer = async (group, handler, latch, concurrency) => {
    const stopping = () => latch.stopped();
    const row = sql.group.get(group) as GroupRow | undefined;
    if (!row) throw new Error(`The persistent subscription group "${group}" does not exist`);
    const filter = JSON.parse(row.filter) as EventFilter;
    // How far reads got past events the filter skips. It is persisted only now and then: re-reading such
    // positions after a restart delivers nothing, and a write on every append of other kinds of events is not.
    let scanned = 0;
    while (!stopping() && !source.signal.isClosed) {
      const replay = sql.nextReplay.get(group) as EventRow | undefined;
      if (replay) {
        const replayed = (parked: { reason: string } | null) =>
          whenFree(() => settleReplayed.immediate(group, replay.position, parked));
        const outcome = await settleReplay(handler, toRecordedEvent(replay), (reason) =>
          replayed({ reason }),
        );
        if (outcome.kind === 'acknowledged') await replayed(null);
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
      // Up to `concurrency` events in the handler at once, each started as soon as a place is free, so that a
      // slow one holds one place and not a chunk; their outcomes are settled in order, each retried on its
      // own, so the checkpoint never passes an event that is not settled. Stopping starts no further event.
      const stored =
        page.events.length > 0
          ? storedRetryCounts(
              group,
              page.events.map((e) => e.position),
            )
          : [];
      const handling = orderedWindow(
        page.events.length,
        concurrency,
        (index) => handlerOutcome(handler, page.events[index]!, stored[index]!),
        { mayStart: () => !stopping() },
      );
      try {
        for (const [index, event] of page.events.entries()) {
          if (!handling.nextStarted()) break;
          const { position } = event;
          // Each write saves the plain acknowledgements before it, so the checkpoint moves in order.
          const settle = async (parked: { reason: string; retryCount: number } | null) => {
            await saveAcknowledged();
            await whenFree(() => settled.immediate(group, position, parked));
          };
          const outcome = await settleDelivery(
            { handler, event, retryCount: stored[index]!, maxRetryCount: row.max_retry_count, stopping },
            {
              retry: async (retryCount) => {
                await saveAcknowledged();
                await whenFree(() => recordRetry.immediate(group, position, retryCount));
              },
              park: (reason, retryCount) => settle({ reason, retryCount }),
            },
            await handling.next(),
          );
          if (outcome.kind === 'left') break;
          // An event retried before has its count to clear with the checkpoint's move.
          if (outcome.kind === 'acknowledged' && outcome.retryCount > 0) await settle(null);
          else if (outcome.kind === 'acknowledged') acknowledged = position;
        }
      } finally {
        // A store failure fails the consumer only once every handler started has returned, so that none is
        // still at work when the consumer starts again and delivers its event anew.
        await handling.allSettled();
      }
      if (stopping()) {
        await saveAcknowledged();
        return;
      }
      await saveAcknowledged();
      if (page.events.length === 0) {
        scanned = page.lastPosition;
        // Caught up: sleep until a commit that holds its types (or one this process cannot vouch for), a
        // replay or the polling interval, then read again. Commits of only other types move it on unread.
        for (;;) {
          if (scanned - checkpoint >= 10_000) {
            await whenFree(() => moveCheckpoint.immediate(group, scanned));
            break;
          }
          const appended = await source.signal.next(source.pollMs, latch);
          const unread = skipUnread(source.journal, appended, scanned, filter.eventTypes);
          scanned = Math.max(scanned, unread.position);
          if (unread.mustRead || stopping()) break;
        }
      } else {
        await yieldToEventLoop();
      }
    }
  };

  const consumers = consumerLatches(consume);

  return {
    ensurePersistentSubscription: (group, { filter = {}, startFrom, maxRetryCount }) => {
      const start = startFrom === 'end' ? (sql.head.get() as { head: number }).head : 0;
      return whenFree(() => {
        sql.createGroup.run(group, JSON.stringify(filter), maxRetryCount, start);
      });
    },

    subscribePersistent: consumers.subscribePersistent,

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
      consumers.poke(group);
    },
  };
};
