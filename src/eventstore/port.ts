import type { ExpectedVersion, NewEvent, RecordedEvent } from '../core/events.js';

/**
 * Which events a read or subscription over all streams sees. All given criteria must match.
 * `streamPrefixes` match the start of the stream name, e.g. `observation-` (one kind of aggregate across
 * tenants) or `observation-t_abc_` (one tenant's observations).
 */
export interface EventFilter {
  eventTypes?: readonly string[];
  streamPrefixes?: readonly string[];
  tenantId?: string;
}

export interface AppendResult {
  /** Version of the stream after the append: the version of its last event. */
  nextExpectedVersion: number;
  /** Global position of the last appended event. */
  lastPosition: number;
}

export interface ReadAllOptions {
  /** Exclusive: only events after this position. 0 reads from the beginning. */
  after?: number;
  maxCount?: number;
  filter?: EventFilter;
  /** Events exactly as stored, without upcasting to the current schema: what hash verification reads. */
  raw?: boolean;
}

export interface ReadBackwardOptions {
  /** Exclusive: only events before this position. Absent: from the newest event on. */
  before?: number;
  maxCount?: number;
  filter?: EventFilter;
}

export interface ReadBackwardPage {
  /** Newest first. */
  events: RecordedEvent[];
  /**
   * The lowest position the read got to, which the next page is read before (it can be below the last
   * returned event when the filter skipped events); 0 when the read reached the first event.
   */
  lastPosition: number;
  /** True when the read reached the first event of the store. */
  isStart: boolean;
}

export interface ReadAllPage {
  events: RecordedEvent[];
  /**
   * The position the read got to. It can be past the last returned event when the filter skipped events,
   * so a caller resuming from here never scans them again.
   */
  lastPosition: number;
  /** True when the read reached the end of the store as it was at the time of the read. */
  isEnd: boolean;
}

export interface CatchUpOptions {
  /** Exclusive start: the caller's own checkpoint. */
  after: number;
  filter?: EventFilter;
  batchSize?: number;
}

/**
 * Called with each batch in order; the subscription waits for the returned promise before the next batch.
 * `lastPosition` is where the batch read got to (see ReadAllPage), the value a caller stores as checkpoint.
 * A batch can be empty: the read passed only events the filter skipped, and `lastPosition` says how far.
 */
export type BatchHandler = (events: RecordedEvent[], lastPosition: number) => Promise<void>;

export interface Subscription {
  /** Stops delivering; resolves when the handler in flight, if any, has returned. */
  stop(): Promise<void>;
  /** Settles when the subscription ends: resolves on stop(), rejects when the handler or the store failed. */
  readonly done: Promise<void>;
}

export interface PersistentSubscriptionSettings {
  filter?: EventFilter;
  /** Where a new group starts: 'start' replays history, 'end' only sees events appended after creation. */
  startFrom: 'start' | 'end';
  /** Deliveries after the first before an event is parked. */
  maxRetryCount: number;
}

export type NackAction = 'retry' | 'park';

/** What a persistent consumer hands back for each event. */
export type ConsumerOutcome = { kind: 'ack' } | { kind: 'nack'; action: NackAction; reason: string };

export interface PersistentEvent {
  event: RecordedEvent;
  /** How many times this event was delivered to the group before this delivery. */
  retryCount: number;
}

export type PersistentHandler = (delivery: PersistentEvent) => Promise<ConsumerOutcome>;

export interface ConsumerOptions {
  concurrency?: number;
}

export interface ParkedEvent {
  event: RecordedEvent;
  reason: string;
  retryCount: number;
  parkedAt: string;
}

/** The answer to a lease request: who holds the duty now, and until when unless renewed. */
export interface Lease {
  acquired: boolean;
  holder: string;
  expiresAt: Date;
}

/** Reads a whole stream, in version order: all that folding an aggregate needs of a store. */
export interface WholeStreamReader {
  readStream(streamName: string): Promise<RecordedEvent[]>;
}

export interface EventStore {
  readonly kind: 'sqlite' | 'eventstoredb' | 'postgres';
  /**
   * Appends the events to the stream in one atomic write, if the stream is at the expected version.
   * Throws VersionConflictError otherwise, and writes nothing.
   */
  appendToStream(
    streamName: string,
    events: readonly NewEvent[],
    expectedVersion: ExpectedVersion,
  ): Promise<AppendResult>;
  /** The stream's events in version order; an empty array when the stream does not exist. */
  readStream(
    streamName: string,
    options?: { fromVersion?: number; maxCount?: number; raw?: boolean },
  ): Promise<RecordedEvent[]>;
  readAll(options?: ReadAllOptions): Promise<ReadAllPage>;
  /**
   * Matching events newest first, from the head as `headPosition` sees it (so never past an event an older
   * writer may still commit below): what a reader of the latest history, such as the audit screen, pages.
   */
  readAllBackward(options?: ReadBackwardOptions): Promise<ReadBackwardPage>;
  /**
   * One tenant's events exactly as stored (never upcast), stream by stream in stream-name order (code-unit
   * order, as `<` compares), each stream in version order, in pages of up to `pageSize`. What `audit verify`
   * reads: with one stream at a time in hand it needs no memory of the others.
   */
  readTenantByStream(tenantId: string, options?: { pageSize?: number }): AsyncIterable<RecordedEvent[]>;
  /** Position of the newest event in the store, 0 when empty. */
  headPosition(): Promise<number>;
  /**
   * A catch-up subscription: delivers every matching event after `after` in commit order, then new events
   * as they are appended. The caller keeps the checkpoint.
   */
  subscribe(options: CatchUpOptions, handler: BatchHandler): Subscription;
  /** Creates the consumer group if it does not exist; an existing group keeps its checkpoint. */
  ensurePersistentSubscription(group: string, settings: PersistentSubscriptionSettings): Promise<void>;
  /**
   * Joins a consumer group. The store keeps the group's checkpoint, retry counts and parked events. With
   * `concurrency` above 1 (default 1), up to that many events are in the handler at once: their order is
   * then not kept, and each is still settled on its own (acknowledged, retried, parked). For handlers whose
   * work is independent per event, so that their writes can share commits.
   */
  subscribePersistent(group: string, handler: PersistentHandler, options?: ConsumerOptions): Subscription;
  listParked(group: string): Promise<ParkedEvent[]>;
  /**
   * The group's stored checkpoint, for its lag in the metrics; null when the group does not exist. Optional:
   * EventStoreDB keeps it as a commit position, not ours, so there the metrics use what this process handled.
   */
  groupCheckpoint?(group: string): Promise<number | null>;
  /** Delivers the group's parked events again. */
  replayParked(group: string): Promise<void>;
  /**
   * Takes or renews the lease on a duty for `ttlMs`, unless another owner holds it unexpired. The embedded
   * store needs this for its consumer groups and projections, which it cannot share between processes;
   * EventStoreDB shares a consumer group's events among any number of consumers, so it grants every request.
   */
  acquireLease(name: string, owner: string, ttlMs: number): Promise<Lease>;
  /** Gives the lease up at once (a clean shutdown), so a standby process need not wait for it to expire. */
  releaseLease(name: string, owner: string): Promise<void>;
  /** Resolves when the backend answers; rejects otherwise. */
  ping(): Promise<void>;
  close(): Promise<void>;
}
