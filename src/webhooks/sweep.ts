import { platformPartition } from '../readmodels/aggregate-projection.js';
import type { Filter, ReadModelStore } from '../readmodels/port.js';
import type { Delivery } from './delivery.decider.js';

/** How much one sweep takes from the deliveries read model. */
export interface SweepLimits {
  /** Due deliveries taken in all. */
  deliveries: number;
  /** Due deliveries taken from any one subscription, when there are more due than `deliveries`. */
  perSubscription: number;
  /** Subscriptions visited in a round-robin sweep, whether they have anything due or not. */
  subscriptions: number;
}

export const sweepLimits: SweepLimits = { deliveries: 1000, perSubscription: 250, subscriptions: 200 };

/** Where a sweep starts. */
export interface SweepPosition {
  /** The last sweep saw more due than it takes: this one goes round-robin at once, without the first query. */
  backlog: boolean;
  /** Where the next round-robin sweep goes on: after this subscription, or from the first one when null. */
  cursor: string | null;
}

export const firstSweep: SweepPosition = { backlog: false, cursor: null };

export interface SweepPage {
  due: Delivery[];
  next: SweepPosition;
}

/** Deliveries read per step of a round-robin sweep, for the ids of the subscriptions they belong to. */
const subscriptionPage = 64;

/** Lets other work in between on a store whose queries do not wait for I/O (SQLite answers in-line). */
const yieldToEventLoop = () => new Promise((resolve) => setImmediate(resolve));

/**
 * The scheduled deliveries due by `horizon`, fair to every subscription. One query takes the oldest due,
 * up to `deliveries`: when that is all of them, they are all attempted, as ever. When more are due (a
 * backlog: a hung receiver's, or the work of an outage), that query is left out until a sweep has seen all
 * that is due again, and the subscriptions that have scheduled deliveries
 * are served round-robin instead, in the order of their ids from after `cursor`, round to it again: each
 * gives at most `perSubscription` of its oldest due. A hung receiver's backlog, however large, then takes
 * one share of a sweep, and every other subscription is reached in the same sweep (or, past the limits, in
 * the next ones, which go on where this one stopped).
 *
 * Each round-robin step is an index seek (a loose index scan): the next subscriptions by the index
 * (status, webhookId), each one's oldest due by (status, webhookId, dueAt). The cost follows the number of
 * subscriptions visited, not the size of any backlog.
 */
export const dueBySubscription = async (
  readModels: ReadModelStore,
  collection: string,
  horizon: Date,
  { backlog, cursor }: SweepPosition,
  limits: SweepLimits = sweepLimits,
): Promise<SweepPage> => {
  const scheduled: Filter = { op: 'eq', field: 'status', value: 'scheduled' };
  const dueBy: Filter = { op: 'lte', field: 'dueAt', value: horizon.toISOString() };
  if (!backlog) {
    const oldest = await readModels.list<Delivery>(collection, {
      tenantId: platformPartition,
      filters: [scheduled, dueBy],
      sort: { field: 'dueAt', direction: 'asc' },
      limit: limits.deliveries,
    });
    if (oldest.length < limits.deliveries) return { due: oldest, next: { backlog: false, cursor } };
  }

  /**
   * The next subscriptions with scheduled deliveries after `after`, in order: the distinct ids of a page of
   * their deliveries, so that subscriptions with a few each come many to a query, and one with a backlog
   * fills a page once, the next query starting after it.
   */
  const nextSubscriptions = async (after: string | null): Promise<string[]> => {
    const page = await readModels.list<Delivery>(collection, {
      tenantId: platformPartition,
      filters: after === null ? [scheduled] : [scheduled, { op: 'gt', field: 'webhookId', value: after }],
      sort: { field: 'webhookId', direction: 'asc' },
      limit: subscriptionPage,
    });
    return [...new Set(page.map((delivery) => delivery.webhookId))];
  };
  const oldestDue = (webhookId: string) =>
    readModels.list<Delivery>(collection, {
      tenantId: platformPartition,
      filters: [scheduled, { op: 'eq', field: 'webhookId', value: webhookId }, dueBy],
      sort: { field: 'dueAt', direction: 'asc' },
      limit: limits.perSubscription,
    });

  const visited: string[] = [];
  let at = cursor;
  let wrapped = cursor === null;
  let complete = false;
  visiting: for (let step = 1; visited.length < limits.subscriptions; step += 1) {
    if (step % 8 === 0) await yieldToEventLoop();
    const next = await nextSubscriptions(at);
    // Past the last subscription: round to the first, once; past the start again, the round is complete.
    if (next.length === 0) {
      if (wrapped) {
        complete = true;
        break;
      }
      wrapped = true;
      at = null;
      continue;
    }
    for (const webhookId of next) {
      if (wrapped && cursor !== null && webhookId > cursor) {
        complete = true;
        break visiting;
      }
      visited.push(webhookId);
      at = webhookId;
      if (visited.length >= limits.subscriptions) break visiting;
    }
  }
  // A few of the visits' own queries side by side: on a networked store they cost a round trip per batch,
  // not one each, and leave the rest of the pool to everyone else.
  const shares: Delivery[][] = [];
  for (let start = 0; start < visited.length; start += 8)
    shares.push(...(await Promise.all(visited.slice(start, start + 8).map(oldestDue))));
  const due: Delivery[] = [];
  for (const [index, share] of shares.entries()) {
    due.push(...share.slice(0, limits.deliveries - due.length));
    // Served up to here: the next sweep goes on after the last subscription that got its share.
    if (due.length >= limits.deliveries) return { due, next: { backlog: true, cursor: visited[index]! } };
  }
  // A whole round with every subscription's due taken in full has seen all that is due: the backlog is over.
  const seenAll = complete && shares.every((share) => share.length < limits.perSubscription);
  return { due, next: { backlog: !seenAll, cursor: complete ? null : (visited.at(-1) ?? null) } };
};
