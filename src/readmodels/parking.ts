import { randomUUID } from 'node:crypto';
import type { RecordedEvent } from '../core/events.js';
import { streamName } from '../core/streams.js';
import type { EventStore } from '../eventstore/port.js';
import { isStoreFailure } from '../core/store-failures.js';
import { type ParkedProjectionEvent, type ReadModelStore } from './port.js';

/**
 * Poison events: an event a projection cannot apply is parked (set aside with its error) and the projection
 * goes on with the next one, so that one tenant's bad event never holds up the others. Only a failure that
 * is the event's own is parked; a failing store is a transient failure, retried from the checkpoint.
 */

export type FailureVerdict = 'poison' | 'transient';

/**
 * Whether applying one event alone failed because of the event (poison: park it, go on) or because of
 * the store (transient: fail, and retry from the checkpoint). `storeAnswers` is whether the store, asked
 * right after, still answers (a ping and an empty commit): an event is only to blame when it does.
 */
export const failureVerdict = (error: unknown, storeAnswers: boolean): FailureVerdict =>
  storeAnswers && !isStoreFailure(error) ? 'poison' : 'transient';

/** Asks the store whether it answers at all: a ping, then a commit that writes nothing new. */
export const storeAnswers = async (
  readModels: ReadModelStore,
  projection: string,
  checkpoint: number,
): Promise<boolean> => {
  try {
    await readModels.ping();
    await readModels.commit(projection, [], checkpoint);
    return true;
  } catch {
    return false;
  }
};

/** Errors can be long (a stack overflow's, a document's text): the record keeps the start. */
const maxErrorLength = 1000;

export const errorText = (error: unknown): string =>
  (error instanceof Error ? error.message : String(error)).slice(0, maxErrorLength);

export const parkedRecord = (
  projection: string,
  event: RecordedEvent,
  error: unknown,
  now: Date,
): ParkedProjectionEvent => ({
  projection,
  position: event.position,
  tenantId: event.metadata.tenantId,
  eventId: event.id,
  eventType: event.type,
  error: errorText(error),
  parkedAt: now.toISOString(),
});

/** The decisions about parked events, recorded as events in the tenant's history. */
export const parkingEventTypes = [
  'ProjectionEventParked',
  'ProjectionEventRetried',
  'ProjectionEventSkipped',
] as const;

export type ParkingDecision = (typeof parkingEventTypes)[number];

export interface ParkingDecisionData {
  projection: string;
  position: number;
  eventId: string;
  eventType: string;
  /** The error the event was parked with (for a retry that succeeded, the one it had). */
  error: string;
}

/** Who decides: the runners and rebuilds on their own, or an operator on the command line. */
export type ParkingActor = 'system:projections' | 'cli';

/** One stream per tenant and projection: `projectionparking-<tenantId>_<projection>`. */
export const parkingStream = (tenantId: string, projection: string): string =>
  streamName('projectionparking', tenantId, projection);

/**
 * Appends the decision to the parked event's tenant's history, caused by the parked event. Appended with
 * no expected version: it records what was decided, it does not decide anything by itself.
 */
export const recordDecision = async (
  eventStore: EventStore,
  type: ParkingDecision,
  parked: ParkedProjectionEvent,
  actor: ParkingActor,
  now = new Date(),
): Promise<void> => {
  const data: ParkingDecisionData = {
    projection: parked.projection,
    position: parked.position,
    eventId: parked.eventId,
    eventType: parked.eventType,
    error: parked.error,
  };
  await eventStore.appendToStream(
    parkingStream(parked.tenantId, parked.projection),
    [
      {
        id: randomUUID(),
        type,
        data,
        metadata: {
          tenantId: parked.tenantId,
          actor,
          correlationId: randomUUID(),
          causationId: parked.eventId,
          occurredAt: now.toISOString(),
        },
      },
    ],
    'any',
  );
};

/**
 * Parks an event of a live projection. The decision is recorded only when the event was not parked
 * already (parked again, its record just takes the new error), and before the record is kept: a crash in
 * between records it twice, never not at all.
 */
export const parkAndRecord = async (
  deps: { eventStore: EventStore; readModels: ReadModelStore },
  parked: ParkedProjectionEvent,
  actor: ParkingActor,
): Promise<void> => {
  const already = (await deps.readModels.listParked(parked.projection)).some(
    (p) => p.position === parked.position,
  );
  if (!already) await recordDecision(deps.eventStore, 'ProjectionEventParked', parked, actor);
  await deps.readModels.parkEvent(parked);
};
