import type { Logger } from 'pino';
import type { RecordedEvent } from '../core/events.js';
import type { Clock } from '../core/ids.js';
import type { EventFilter, EventStore } from '../eventstore/port.js';
import { notRunning, supervise, type ConsumerStatus, type Supervised } from '../core/supervisor.js';

/** The events after which a credential must stop working for good, and the id each one ends. */
const revokedIdOf = new Map<string, (data: Record<string, string>) => string | undefined>([
  ['ApiKeyRevoked', (data) => data.id],
  ['OAuthClientRevoked', (data) => data.id],
  ['UserDisabled', (data) => data.userId],
]);

/**
 * A session's end (a sign-out, a reused refresh token) is one more revocation, but not for good: its
 * refresh tokens are refused by the session's own stream, so only its access tokens need the set, and the
 * last of those expires an access-token lifetime after the end (plus this margin, for a refresh that raced
 * the end). Sessions end at every sign-out; remembering each one for ever would grow without bound.
 */
const sessionEndMarginMs = 60_000;

export interface RevocationSettings {
  clock: Clock;
  accessTokenTtlSeconds: number;
}

export interface Revocations {
  /** Reads every revocation so far, then follows new ones as they are appended. */
  start(): Promise<void>;
  stop(): Promise<void>;
  isRevoked(ids: readonly string[]): boolean;
  status(): ConsumerStatus;
  /** The event types it follows and the last position it read: what the metrics compute its lag from. */
  readonly filter: EventFilter;
  checkpoint(): number;
}

const consumerName = 'revocations';

/**
 * The set of revoked credential ids, kept by a subscription. Authentication checks it on every request,
 * cached or not, so a revocation takes effect as soon as its event reaches this process (in-process
 * appends wake the subscription at once; EventStoreDB pushes to every instance). A failed subscription is
 * started again by its supervisor from the last revocation it read: a revocation is never missed.
 */
export const revocations = (
  eventStore: EventStore,
  logger: Logger,
  { clock, accessTokenTtlSeconds }: RevocationSettings,
): Revocations => {
  const revoked = new Set<string>();
  /** Ended sessions, each until its access tokens have all expired; in order of their ends. */
  const endedSessions = new Map<string, number>();
  const filter = { eventTypes: [...revokedIdOf.keys(), 'SessionRevoked'] };
  let subscription: Supervised | null = null;
  let after = 0;
  const forgetExpiredSessions = (now: number) => {
    for (const [sessionId, until] of endedSessions) {
      if (until > now) break;
      endedSessions.delete(sessionId);
    }
  };
  const add = (events: readonly RecordedEvent[]) => {
    const now = clock().getTime();
    for (const event of events) {
      const data = event.data as Record<string, string>;
      if (event.type === 'SessionRevoked') {
        const until =
          Date.parse(event.metadata.occurredAt) + accessTokenTtlSeconds * 1000 + sessionEndMarginMs;
        if (data.sessionId && until > now) endedSessions.set(data.sessionId, until);
        continue;
      }
      const id = revokedIdOf.get(event.type)?.(data);
      if (id) revoked.add(id);
    }
    forgetExpiredSessions(now);
  };
  const sessionEnded = (id: string) => (endedSessions.get(id) ?? 0) > clock().getTime();

  return {
    start: async () => {
      for (;;) {
        const page = await eventStore.readAll({ after, maxCount: 1000, filter });
        add(page.events);
        after = page.lastPosition;
        if (page.isEnd) break;
      }
      subscription = supervise(
        consumerName,
        () =>
          eventStore.subscribe({ after, filter }, (events, lastPosition) => {
            add(events);
            after = lastPosition;
            return Promise.resolve();
          }),
        { logger },
      );
    },
    stop: async () => subscription?.stop(),
    status: () => subscription?.status() ?? notRunning(consumerName),
    isRevoked: (ids) => ids.some((id) => revoked.has(id) || sessionEnded(id)),
    filter,
    checkpoint: () => after,
  };
};
