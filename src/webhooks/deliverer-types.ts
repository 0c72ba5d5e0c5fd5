import type { Logger } from 'pino';
import type { KnownState } from '../core/command-handler.js';
import type { Clock } from '../core/ids.js';
import type { EventStore } from '../eventstore/port.js';
import type { ReadModelStore } from '../readmodels/port.js';
import type { Claimant, DeliveryState } from './delivery.decider.js';
import type { WebhookSender } from './sender.js';
import type { SubscriptionsView } from './subscription.decider.js';

export interface WebhookSettings {
  retryDelaysMs: readonly number[];
  timeoutMs: number;
  /** How long a claim may stay without an outcome before another attempt takes over (a crashed instance). */
  claimTimeoutMs: number;
  concurrency: number;
  perSubscription: number;
}

/** Why the service disabled a subscription: bounded, so it can be a metric's label. */
export type DisableReason = 'retries_exhausted' | 'owner_lacks_scope';

/** What the worker reports besides its events and logs: the metrics count it (src/observability). */
export interface WebhookObserver {
  /** An attempt's recorded outcome; `occurredAt` is the domain fact's, for the latency to a 2xx. */
  attempted(attempt: {
    ok: boolean;
    retrying: boolean;
    exhausted: boolean;
    manual: boolean;
    occurredAt: string;
  }): void;
  disabled(reason: DisableReason): void;
}

export interface DelivererDeps {
  eventStore: EventStore;
  readModels: ReadModelStore;
  sender: WebhookSender;
  secretKey: string;
  clock: Clock;
  logger: Logger;
  settings: WebhookSettings;
  deliveriesCollection: string;
  observer?: WebhookObserver;
  /** The tenants' subscriptions, read incrementally (cachedViews over subscriptionsView). */
  subscriptions: (stream: string) => Promise<SubscriptionsView>;
}

/** A slot taken for a delivery about to be scheduled: its first claim goes in the scheduling append. */
export interface Reservation {
  claim: Claimant;
  /** Attempts the delivery the scheduling append claimed, in the reserved slot. */
  start(tenantId: string, claimed: KnownState<DeliveryState>): void;
  /** Gives the slot back unused: nothing was scheduled. */
  release(): void;
}

/** What the deliverer's parts share within one instance: its stop signals and the attempts it holds. */
export interface DelivererState {
  /** Aborted once a stop begins: nothing new starts. A start replaces it. */
  stopping: AbortController;
  /** Cuts the attempts still in flight when a stop's deadline passes (see stop). */
  interrupting: AbortController;
  /** Deliveries with an attempt queued or under way here, up to its recorded outcome. */
  queued: Set<string>;
  /** Every attempt of this instance, from its queueing to its recorded outcome: what a stop waits for. */
  inFlight: Set<Promise<void>>;
  /** Attempts waiting in this process for their due time, at most `lookAheadMs` ahead. */
  dueTimers: Map<string, NodeJS.Timeout>;
}

/**
 * How far ahead the sweep looks for due retries. Each one found gets a timer for its due time, so it is
 * attempted on time rather than at the next whole-second sweep.
 */
export const lookAheadMs = 2000;
