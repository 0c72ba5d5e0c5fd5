import { toEnvelope } from '../core/command-handler.js';
import type { Decider, DomainEvent } from '../core/decider.js';
import { fold } from '../core/decider.js';
import { isCalendarDateTime } from '../http/codec.js';
import type { RecordedEvent } from '../core/events.js';
import { parseStreamName } from '../core/streams.js';
import { apiKeyDecider, oauthClientDecider } from '../credentials/secret-credential.decider.js';
import { sessionDecider } from '../credentials/session.decider.js';
import { userDecider } from '../credentials/user.decider.js';
import type { EventStore } from '../eventstore/port.js';
import { locationDecider } from '../locations/decider.js';
import { observationDecider } from '../observations/decider.js';
import { tenantDecider } from '../tenants/decider.js';
import { visitDecider } from '../visits/decider.js';
import { deliveryDecider } from '../webhooks/delivery.decider.js';
import { cvJobDecider } from '../cv/decider.js';
import { foldRecorded } from '../webhooks/subscription.decider.js';

type Fold = (events: readonly RecordedEvent[]) => unknown;

const folding =
  <State, Event extends DomainEvent>(
    decider: Pick<Decider<State, never, Event>, 'initialState' | 'evolve'>,
  ): Fold =>
  (events) =>
    fold(decider, events.map(toEnvelope<Event>));

/**
 * Each aggregate's fold, by the category of its streams: the very evolve functions the command handlers
 * use, so a replayed state is the state the service decided on at that moment.
 */
export const folds: Record<string, Fold> = {
  observation: folding(observationDecider),
  location: folding(locationDecider),
  visit: folding(visitDecider),
  tenant: folding(tenantDecider),
  user: folding(userDecider),
  apikey: folding(apiKeyDecider),
  oauthclient: folding(oauthClientDecider),
  session: folding(sessionDecider),
  delivery: folding(deliveryDecider),
  webhooks: foldRecorded,
  cvjob: folding(cvJobDecider),
};

export type Until = { position: number } | { time: string };

export class UntilError extends Error {}

/** `--until`: a global position, or an ISO 8601 time with a zone that is not in the future. */
export const parseUntil = (text: string, now: Date): Until => {
  if (/^\d{1,15}$/.test(text)) return { position: Number(text) };
  const time = Date.parse(text);
  if (
    !/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:\d{2})$/i.test(text) ||
    !isCalendarDateTime(text)
  ) {
    throw new UntilError(
      `--until ${text} is neither a position nor an ISO 8601 time with a zone (e.g. 2026-05-01T09:30:00Z)`,
    );
  }
  if (time > now.getTime()) throw new UntilError(`--until ${text} is in the future`);
  return { time: new Date(time).toISOString() };
};

export const isBefore = (event: RecordedEvent, until: Until | undefined): boolean =>
  !until ||
  ('position' in until ? event.position <= until.position : event.metadata.occurredAt <= until.time);

/** The tenant's history in commit order, up to `until`, page by page. */
export async function* history(eventStore: EventStore, tenantId: string, until?: Until, streamName?: string) {
  for (let after = 0; ;) {
    const page = await eventStore.readAll({
      after,
      maxCount: 1000,
      filter: { tenantId, ...(streamName ? { streamPrefixes: [streamName] } : {}) },
    });
    for (const event of page.events) {
      if (streamName && event.streamName !== streamName) continue;
      if (!isBefore(event, until)) return;
      yield event;
    }
    after = page.lastPosition;
    if (page.isEnd) return;
  }
}

/** An aggregate's state as it was at `until`, or null for a stream no fold knows. */
export const stateAt = async (eventStore: EventStore, streamName: string, until?: Until) => {
  const parsed = parseStreamName(streamName);
  // An own-property check: a stream named like `constructor-<tenant>_x` names no fold of Object.prototype.
  const foldStream = parsed && Object.hasOwn(folds, parsed.aggregate) ? folds[parsed.aggregate] : undefined;
  if (!foldStream) return null;
  const events = (await eventStore.readStream(streamName)).filter((event) => isBefore(event, until));
  return { version: events.at(-1)?.streamVersion ?? -1, state: foldStream(events) };
};
