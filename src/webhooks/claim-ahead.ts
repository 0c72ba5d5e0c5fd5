import type { WebhookSettings } from './deliverer-types.js';
import { Queue } from './limiter.js';

/**
 * Claiming ahead (docs/webhooks.md#claiming-ahead): a subscription with a backlog has its queued deliveries
 * claimed in batches before their HTTP slots are free, so that the claims of many share one commit and a
 * freed slot POSTs an already-claimed delivery at once. What is in flight to the receiver stays bounded by
 * the slots; what is claimed ahead of them is bounded here.
 */

/** A subscription never holds more claims ahead of its slots than this many times its slots. */
export const aheadFactor = 4;

/**
 * How long a claim may wait for its slot and still be POSTed on. The claim time-out leaves an attempt the
 * receiver's whole time-out and some slack to record its outcome (feature.ts: 10 s); a claim that waited
 * more than half of that slack is released rather than used, so that its outcome is always recorded well
 * before another instance may take the delivery over (a late POST there would be a duplicate).
 */
export const aheadBudgetMs = ({
  claimTimeoutMs,
  timeoutMs,
}: Pick<WebhookSettings, 'claimTimeoutMs' | 'timeoutMs'>): number =>
  Math.max(0, (claimTimeoutMs - timeoutMs) / 2);

/** How long ago, at `now`, the claim was taken (ms). */
export const claimAgeMs = (claimedAt: string | null, now: Date): number =>
  now.getTime() - Date.parse(claimedAt ?? '');

/**
 * How many claims a subscription may hold ahead of its slots, from how long its slots stay taken
 * (`attemptMs`: the smoothed time of its attempts, or longer while one in flight has taken longer): as many
 * as its slots go through in half the budget, so that the last one claimed is expected to start well
 * within it. 0, claim each delivery in its slot, until an attempt of the lane has ended (a receiver that
 * hangs from the start is never claimed ahead of) and whenever the receiver is too slow for any.
 */
export const aheadLimit = (
  { perSubscription }: Pick<WebhookSettings, 'perSubscription'>,
  budgetMs: number,
  attemptMs: number | null,
): number => {
  if (budgetMs <= 0 || attemptMs === null) return 0;
  const most = aheadFactor * perSubscription;
  return Math.min(most, Math.floor((perSubscription * budgetMs) / 2 / Math.max(attemptMs, 0.01)));
};

/** An exponentially weighted mean: recent attempts count most, one slow answer does not set the pace alone. */
export const smoothed = (previous: number | null, sample: number, weight = 0.2): number =>
  previous === null ? sample : previous + weight * (sample - previous);

/** The claims of one subscription on their way to its slots. */
export interface Lane {
  tenantId: string;
  /** Kicked, not yet claimed, in the order kicked. */
  waiting: Queue<string>;
  /** Claims appended and not yet answered. */
  claiming: number;
  /** Claimed, waiting for a slot. */
  stocked: number;
  /** Queued for a slot without a claim (claimed in it). */
  inSlotQueue: number;
  /** When each attempt now in a slot started (ms). */
  inSlot: Set<{ startedAt: number }>;
  /** The smoothed time an attempt held its slot; null until one ended. */
  attemptMs: number | null;
}

export const newLane = (tenantId: string, attemptMs: number | null = null): Lane => ({
  tenantId,
  waiting: new Queue(),
  claiming: 0,
  stocked: 0,
  inSlotQueue: 0,
  inSlot: new Set(),
  attemptMs,
});

/** Deliveries of the lane not yet in a slot. */
export const pendingIn = (lane: Lane): number =>
  lane.waiting.length + lane.claiming + lane.stocked + lane.inSlotQueue;

/** The lane's pace at `now`: its smoothed attempt time, or the age of an attempt in flight if longer. */
export const paceOf = (lane: Lane, now: number): number | null => {
  if (lane.attemptMs === null) return null;
  let pace = lane.attemptMs;
  for (const { startedAt } of lane.inSlot) pace = Math.max(pace, now - startedAt);
  return pace;
};

/** Notes a slot taken at `now` (ms); the function returned notes it given back, once. */
export const noteSlot = (lane: Lane, now: () => number): (() => void) => {
  const attempt = { startedAt: now() };
  lane.inSlot.add(attempt);
  return () => {
    if (!lane.inSlot.delete(attempt)) return;
    lane.attemptMs = smoothed(lane.attemptMs, now() - attempt.startedAt);
  };
};

/**
 * How many of the waiting deliveries to claim ahead now: none while at least half the limit is still held
 * (claiming or claimed), so that claims go out in batches of half the limit or more and share commits,
 * and the slots never run dry while a batch commits.
 */
export const claimsToTake = (lane: Lane, limit: number): number => {
  const held = lane.claiming + lane.stocked;
  if (limit === 0 || held > limit / 2) return 0;
  return Math.min(lane.waiting.length, limit - held);
};

/**
 * How many of the waiting deliveries to queue for a slot unclaimed (when none is claimed ahead): enough
 * that a freed slot starts the next at once, no more, so that the lane can claim ahead again as soon as
 * its receiver is fast enough.
 */
export const slotQueueToFill = (lane: Lane, perSubscription: number): number =>
  Math.max(0, Math.min(lane.waiting.length, perSubscription - lane.inSlotQueue));
