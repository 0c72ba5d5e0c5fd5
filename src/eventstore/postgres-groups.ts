import { randomUUID } from 'node:crypto';
import type pg from 'pg';
import type { RecordedEvent } from '../core/events.js';
import { inOneRoundTrip, orUnavailable } from '../postgres/client.js';
import type { EventFilter, EventStore, ParkedEvent } from './port.js';
import type { AppendSignal, StopLatch } from './append-signal.js';
import { consumerLatches, type GroupConsumer } from './consumer-latches.js';
import { settleDelivery, settleReplay } from './handler-outcomes.js';
import { yieldToEventLoop } from './catch-up-pacing.js';
import { appendedChannel, somethingAppended } from './postgres-listener.js';
import { eventColumns, orderedPage, horizonCtes, type EventRow } from './postgres-schema.js';
import { toRecordedEvent } from './event-rows.js';

/**
 * Consumer groups shared by any number of consumers in any number of processes (competing consumers).
 *
 * - Feeding: one consumer at a time (a try-lock per group; the others go on claiming) copies the group's
 *   next events below the horizon into `consumer_group_events`, and moves the group's `fed` past them.
 * - Claiming: a consumer takes the oldest unclaimed events with FOR UPDATE SKIP LOCKED and marks them
 *   claimed for `claimTtlMs`, renewed while it works. A consumer that dies (kill -9) leaves its claims to
 *   run out, then another takes them: delivery is at least once.
 * - Settling: an acknowledged event's row goes; a retried one keeps its claim with its count raised (a
 *   restart resumes the count); a parked one stays with `parked_at` until a replay.
 *
 * No transaction stays open while a handler runs, so none holds the horizon back for the readers.
 */

type PersistentPart = Pick<
  EventStore,
  'ensurePersistentSubscription' | 'subscribePersistent' | 'listParked' | 'replayParked' | 'groupCheckpoint'
>;

export interface GroupSource {
  pool: pg.Pool;
  signal: AppendSignal;
  pollMs: number;
  /** How long a claim holds without renewal: how soon a dead consumer's events go to another. */
  claimTtlMs: number;
  /**
   * A renewal of a consumer's claims failed: if the next ones fail too, its claims run out while it still
   * handles their events, and another consumer takes them (handled twice). Told, so that it is logged and
   * counted; the consumer goes on, since the next renewal may succeed.
   */
  onClaimRenewalFailed?: (group: string, error: unknown) => void;
}

/** The advisory lock key space of feeding (the first key); the second is the group name's hash. */
const feedLockSpace = 0x6f627302;
/** Events one feed queues at most. */
const feedPage = 500;
/** How soon a consumer looks again while events wait behind the horizon or another consumer feeds. */
const lookAgainMs = 20;

interface Claimed {
  event: RecordedEvent;
  retryCount: number;
  replay: boolean;
}

export const consumerGroups = ({
  pool,
  signal,
  pollMs,
  claimTtlMs,
  onClaimRenewalFailed,
}: GroupSource): PersistentPart => {
  /**
   * An idle consumer's sleep: until a wake-up, a poke (a replay) or `waitMs`. Commits of only types the
   * group does not read do not end it, but the time does: the consumer then feeds, which moves `fed` past
   * them, and claims, which takes over the events of a consumer whose claims ran out.
   */
  const idle = async (waitMs: number, latch: StopLatch, eventTypes: readonly string[] | undefined) => {
    const until = Date.now() + waitMs;
    for (;;) {
      const appended = await signal.next(Math.max(0, until - Date.now()), latch);
      const unread =
        appended !== null &&
        appended !== somethingAppended &&
        eventTypes !== undefined &&
        !eventTypes.some((type) => appended.types.has(type));
      if (!unread || latch.stopped() || Date.now() >= until) return;
    }
  };

  const query = <R extends pg.QueryResultRow>(text: string, params: unknown[]) =>
    orUnavailable(pool.query<R>(text, params));

  /** Takes the oldest unclaimed events of the group for `claimTtlMs`: as many as `count`, for `consumer`. */
  const claimStatement = (group: string, consumer: string, count: number) => ({
    text: `WITH picked AS (
         SELECT position FROM consumer_group_events
         WHERE group_name = $1 AND (parked_at IS NULL OR replay)
           AND (claimed_until IS NULL OR claimed_until < now())
         ORDER BY position LIMIT $3 FOR UPDATE SKIP LOCKED
       ), claimed AS (
         UPDATE consumer_group_events q
         SET claimed_by = $2, claimed_until = now() + make_interval(secs => $4::double precision / 1000)
         FROM picked WHERE q.group_name = $1 AND q.position = picked.position
         RETURNING q.position, q.retry_count, q.replay
       )
       SELECT ${eventColumns}, claimed.retry_count, claimed.replay
       FROM claimed JOIN events e ON e.position = claimed.position ORDER BY e.position`,
    values: [group, consumer, count, claimTtlMs],
  });

  const claimedOf = (rows: (EventRow & { retry_count: number; replay: boolean })[]): Claimed[] =>
    rows.map((row) => ({ event: toRecordedEvent(row), retryCount: row.retry_count, replay: row.replay }));

  const claim = async (group: string, consumer: string, count: number): Promise<Claimed[]> => {
    const { text, values } = claimStatement(group, consumer, count);
    const { rows } = await query<EventRow & { retry_count: number; replay: boolean }>(text, [...values]);
    return claimedOf(rows);
  };

  /**
   * Queues the group's next events, unless another consumer is feeding it right now (a try-lock per group),
   * then claims up to `count`: in one round trip, three statements of one transaction. The feed is a
   * statement of its own after the lock, so that its snapshot sees what the previous feeder committed; it
   * finds in a transaction-local setting whether the lock was taken. Says what it queued (null when another
   * consumer was feeding) and whether committed events wait behind the horizon.
   */
  const feedAndClaim = async (group: string, filter: EventFilter, consumer: string, count: number) => {
    const page = orderedPage(
      {
        columns: 'e.position',
        from: ', g, horizon',
        where: 'e.position > g.fed AND e.transaction_id < horizon.xmin',
        limit: '$2',
      },
      filter,
      3,
    );
    const feeding = "current_setting('obs.feeding') = 'true'";
    const [, fed, claimed] = await inOneRoundTrip(pool, [
      {
        text: "SELECT set_config('obs.feeding', pg_try_advisory_xact_lock($1, hashtext($2))::text, true)",
        values: [feedLockSpace, group],
      },
      {
        text: `WITH ${horizonCtes},
         g AS (SELECT fed FROM consumer_groups WHERE name = $1 AND ${feeding}),
         page AS MATERIALIZED (${page.sql}),
         queued AS (
           INSERT INTO consumer_group_events (group_name, position) SELECT $1, position FROM page
           ON CONFLICT DO NOTHING RETURNING 1
         ),
         moved AS (
           UPDATE consumer_groups c
           SET fed = CASE WHEN (SELECT count(*) FROM page) >= $2 THEN (SELECT max(position) FROM page)
                          ELSE greatest(c.fed, heads.safe) END
           FROM heads WHERE c.name = $1 AND ${feeding} RETURNING 1
         )
         SELECT ${feeding} AS feeding, (SELECT count(*) FROM queued) AS queued,
                heads.visible > heads.safe AS behind
         FROM heads`,
        values: [group, feedPage, ...page.params],
      },
      claimStatement(group, consumer, count),
    ]);
    const row = fed?.rows[0] as { feeding: boolean; queued: string; behind: boolean } | undefined;
    return {
      fed: row?.feeding ? { queued: Number(row.queued), behind: row.behind } : null,
      claimed: claimedOf((claimed?.rows ?? []) as (EventRow & { retry_count: number; replay: boolean })[]),
    };
  };

  // An outcome lands only on the claim of the consumer that decided it: a consumer that stalled past its
  // claims and comes back late changes nothing another consumer now holds (its event is delivered again).
  const sql = {
    acknowledge: (group: string, consumer: string, positions: number[]) =>
      query(
        `DELETE FROM consumer_group_events
         WHERE group_name = $1 AND position = ANY($2::bigint[]) AND claimed_by = $3`,
        [group, positions, consumer],
      ),
    retry: (group: string, consumer: string, position: number, retryCount: number) =>
      query(
        `UPDATE consumer_group_events SET retry_count = $3,
           claimed_until = now() + make_interval(secs => $4::double precision / 1000)
         WHERE group_name = $1 AND position = $2 AND claimed_by = $5`,
        [group, position, retryCount, claimTtlMs, consumer],
      ),
    park: (group: string, consumer: string, position: number, reason: string, retryCount: number) =>
      query(
        `UPDATE consumer_group_events SET parked_at = now(), reason = $3, retry_count = $4, replay = false,
           claimed_by = NULL, claimed_until = NULL
         WHERE group_name = $1 AND position = $2 AND claimed_by = $5`,
        [group, position, reason, retryCount, consumer],
      ),
    renew: (group: string, consumer: string) =>
      query(
        `UPDATE consumer_group_events SET claimed_until = now() + make_interval(secs => $3::double precision / 1000)
         WHERE group_name = $1 AND claimed_by = $2`,
        [group, consumer, claimTtlMs],
      ),
    release: (group: string, consumer: string) =>
      query(
        'UPDATE consumer_group_events SET claimed_by = NULL, claimed_until = NULL WHERE group_name = $1 AND claimed_by = $2',
        [group, consumer],
      ),
  };

  const consume: GroupConsumer = async (group, handler, latch, concurrency) => {
    const stopped = () => latch.stopped();
    const { rows } = await query<{ filter: EventFilter; max_retry_count: number }>(
      'SELECT filter, max_retry_count FROM consumer_groups WHERE name = $1',
      [group],
    );
    const settings = rows[0];
    if (!settings) throw new Error(`The persistent subscription group "${group}" does not exist`);
    const consumer = randomUUID();
    const acknowledged: number[] = [];
    const flushAcknowledged = async () => {
      if (acknowledged.length === 0) return;
      await sql.acknowledge(group, consumer, acknowledged.splice(0));
    };
    // Claims are renewed while this consumer holds any, so a slow handler keeps its events.
    const renewal = setInterval(
      () => void sql.renew(group, consumer).catch((error: unknown) => onClaimRenewalFailed?.(group, error)),
      claimTtlMs / 3,
    );
    renewal.unref();

    /** One event to its outcome: retried in place while it has retries left, else parked. */
    const settle = async ({ event, retryCount, replay }: Claimed): Promise<void> => {
      const park = (reason: string, count: number) =>
        sql.park(group, consumer, event.position, reason, count);
      const outcome = replay
        ? await settleReplay(handler, event, park)
        : await settleDelivery(
            { handler, event, retryCount, maxRetryCount: settings.max_retry_count, stopping: stopped },
            { retry: (count) => sql.retry(group, consumer, event.position, count), park },
          );
      if (outcome.kind === 'acknowledged') acknowledged.push(event.position);
    };

    // The events in hand: each settles on its own, and the window is refilled once half of it is free, so
    // that one slow handler holds one place, not the whole batch it came in (a batch waited for its slowest).
    const inHand = new Set<Promise<void>>();
    let failure: { error: unknown } | null = null;
    const take = (claimed: Claimed) => {
      const settling: Promise<void> = settle(claimed)
        .catch((error: unknown) => {
          failure ??= { error };
        })
        .finally(() => inHand.delete(settling));
      inHand.add(settling);
    };
    const refillAt = Math.floor(concurrency / 2);
    const types = settings.filter.eventTypes;
    /**
     * Sleeps as `idle` does, but ends when an event in hand settles too, so that its ack goes at once; true
     * when it ended so. A sleep cut only by a settled event does not look again unless a wake-up came: that
     * would cost a claim and a feed per event settled.
     */
    const idleOrSettled = async (waitMs: number): Promise<boolean> => {
      let cut = false;
      const sleeping = idle(waitMs, latch, types).then(() => cut);
      if (inHand.size === 0) return sleeping;
      await Promise.race([sleeping, ...inHand]);
      cut = true;
      latch.poke();
      return sleeping;
    };

    try {
      // Look again soon, not in a polling interval, when events wait behind the horizon or another consumer
      // is feeding the group right now: neither sends a wake-up.
      let soon = false;
      let look = true;
      /**
       * Whether the queue may hold events for a claim on its own. When the last feed queued no more than it
       * claimed, the next look feeds first: a claim of an empty queue would be a round trip for nothing. The
       * feed's own claim still takes whatever is queued (retries, replays, claims that ran out).
       */
      let queueMayHold = true;
      /** The wake-ups sent before the last look: one sent during it reached no sleeper. */
      let seen = signal.notified;
      while (!stopped() && !signal.isClosed && failure === null) {
        let claimed: Claimed[] = [];
        const looking = look && inHand.size <= refillAt;
        if (looking) {
          seen = signal.notified;
          // Only what goes to the handler now: the rest stays for the other consumers of the group.
          const want = concurrency - inHand.size;
          claimed = queueMayHold ? await claim(group, consumer, want) : [];
          if (claimed.length < want) {
            const next = await feedAndClaim(group, settings.filter, consumer, want - claimed.length);
            soon = next.fed === null || next.fed.behind;
            // What was queued and not taken waits in the queue: the next look claims before it feeds.
            queueMayHold = next.fed === null || next.fed.queued > next.claimed.length;
            claimed = [...claimed, ...next.claimed];
          }
          claimed.forEach(take);
        }
        await flushAcknowledged();
        if (claimed.length > 0) {
          look = true;
          await yieldToEventLoop();
        } else if (inHand.size > refillAt) {
          // Full: whatever is queued waits for room, and is claimed once there is.
          look = true;
          await Promise.race(inHand);
        } else if (look && !looking) {
          // The window was full when this round began, and its events settled since: look before any sleep.
        } else if (signal.wokeSince(seen, types)) {
          // Woken while it looked, with no sleeper to hear it: a commit the feed's snapshot may not have seen.
          look = true;
        } else {
          const cut = await idleOrSettled(soon ? lookAgainMs : pollMs);
          // Cut by a settled event, it claims again only where there may be something: queued events it did
          // not take, or a wake-up since it last looked.
          look = !cut || queueMayHold || signal.wokeSince(seen, types);
        }
      }
    } finally {
      // A failure fails the consumer only once every event in hand has settled, so that none is still at
      // work when the consumer starts again and delivers its event anew.
      while (inHand.size > 0) await Promise.all(inHand);
      clearInterval(renewal);
      // What this consumer acknowledged is settled, and what it still holds goes back to the group at once
      // (a failed consumer's supervisor starts another, which must not wait for the claims to run out).
      await flushAcknowledged().catch(() => undefined);
      await sql.release(group, consumer).catch(() => undefined);
    }
    if (failure !== null) throw (failure as { error: unknown }).error;
  };

  const consumers = consumerLatches(consume);

  return {
    ensurePersistentSubscription: async (group, { filter = {}, startFrom, maxRetryCount }) => {
      // An existing group keeps where it is but takes the current filter and retry limit, as on SQLite.
      await query(
        `WITH ${horizonCtes}
         INSERT INTO consumer_groups (name, filter, max_retry_count, fed)
         SELECT $1, $2, $3, CASE WHEN $4 THEN heads.safe ELSE 0 END FROM heads
         ON CONFLICT (name) DO UPDATE SET filter = excluded.filter, max_retry_count = excluded.max_retry_count`,
        [group, JSON.stringify(filter), maxRetryCount, startFrom === 'end'],
      );
    },

    subscribePersistent: consumers.subscribePersistent,

    listParked: async (group) => {
      const { rows } = await query<EventRow & { reason: string; retry_count: number; parked_at: Date }>(
        `SELECT ${eventColumns}, q.reason, q.retry_count, q.parked_at
         FROM consumer_group_events q JOIN events e ON e.position = q.position
         WHERE q.group_name = $1 AND q.parked_at IS NOT NULL ORDER BY q.position`,
        [group],
      );
      return rows.map((row): ParkedEvent => ({
        event: toRecordedEvent(row),
        reason: row.reason,
        retryCount: row.retry_count,
        parkedAt: row.parked_at.toISOString(),
      }));
    },

    groupCheckpoint: async (group) => {
      // Everything up to here is settled: the oldest event still queued but not parked, or the fed mark.
      const { rows } = await query<{ fed: string; pending: string | null }>(
        `SELECT g.fed, (SELECT min(position) FROM consumer_group_events q
                        WHERE q.group_name = g.name AND q.parked_at IS NULL) AS pending
         FROM consumer_groups g WHERE g.name = $1`,
        [group],
      );
      const row = rows[0];
      if (!row) return null;
      return row.pending === null ? Number(row.fed) : Math.min(Number(row.fed), Number(row.pending) - 1);
    },

    replayParked: async (group) => {
      await query(
        'UPDATE consumer_group_events SET replay = true WHERE group_name = $1 AND parked_at IS NOT NULL',
        [group],
      );
      // This process's consumers at once; the others' through the wake-up channel.
      consumers.poke(group);
      await query(`SELECT pg_notify('${appendedChannel}', '')`, []);
    },
  };
};
