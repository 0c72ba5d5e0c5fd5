import { ConflictError, NotFoundError } from '../core/errors.js';
import type { RecordedEvent } from '../core/events.js';
import type { EventStore } from '../eventstore/port.js';
import { failureVerdict, parkedRecord, recordDecision, storeAnswers, type ParkingActor } from './parking.js';
import type { ParkedProjectionEvent, ReadModelStore } from './port.js';
import type { Projection } from './projection.js';
import { applyBatch } from './runner.js';

/**
 * What an operator does with a parked event (`projections parked retry|skip`): apply it again, or drop it
 * on purpose. Either decision is recorded as an event in the tenant's history.
 */

export interface ParkedDeps {
  eventStore: EventStore;
  readModels: ReadModelStore;
}

export type RetryOutcome =
  { position: number; outcome: 'applied' } | { position: number; outcome: 'parked'; error: string };

/** The parked event at `position`, or a NotFoundError that says which ones there are. */
export const findParked = async (
  readModels: ReadModelStore,
  projection: string,
  position: number,
): Promise<ParkedProjectionEvent> => {
  const parked = await readModels.listParked(projection);
  const found = parked.find((p) => p.position === position);
  if (!found) {
    const positions = parked.map((p) => p.position).join(', ') || 'none';
    throw new NotFoundError(
      `${projection} has no parked event at position ${position}; parked: ${positions}`,
    );
  }
  return found;
};

/** Positions are unique: the first event after `position - 1` is the one at `position`, on every store. */
const eventAt = async (eventStore: EventStore, parked: ParkedProjectionEvent): Promise<RecordedEvent> => {
  const [event] = (await eventStore.readAll({ after: parked.position - 1, maxCount: 1 })).events;
  if (event?.position !== parked.position || event.id !== parked.eventId) {
    throw new NotFoundError(`The event ${parked.eventId} is no longer at position ${parked.position}`);
  }
  return event;
};

/**
 * Applies a parked event again to the live read model. When it now applies, it leaves the list
 * (`ProjectionEventRetried`); when it fails because of itself again, it stays with the new error
 * (`ProjectionEventParked`); a failing store changes nothing and throws. An event whose document later
 * events have already changed cannot be applied out of order: that is a ConflictError, and a rebuild (which
 * applies it in order) is the way.
 */
export const retryParked = async (
  projection: Projection<unknown>,
  deps: ParkedDeps,
  parked: ParkedProjectionEvent,
  actor: ParkingActor = 'cli',
): Promise<RetryOutcome> => {
  const { eventStore, readModels } = deps;
  await readModels.ensureCollection(projection.collection);
  const event = await eventAt(eventStore, parked);
  const key = projection.documentKey(event);
  let changes;
  try {
    changes = await applyBatch(projection, readModels, [event]);
    await readModels.commit(projection.name, changes, 0);
  } catch (error) {
    const checkpoint = await readModels.getCheckpoint(projection.name);
    if (failureVerdict(error, await storeAnswers(readModels, projection.name, checkpoint)) === 'transient') {
      throw error;
    }
    const again = parkedRecord(projection.name, event, error, new Date());
    await recordDecision(eventStore, 'ProjectionEventParked', again, actor);
    await readModels.parkEvent(again);
    return { position: parked.position, outcome: 'parked', error: again.error };
  }
  // A write below the document's position is ignored by the store: then later events got there first.
  const written = key && (await readModels.get(projection.collection.name, key));
  const change = changes[0];
  if (key && (change === undefined || (change.doc !== null && written?.position !== event.position))) {
    throw new ConflictError(
      `Later events already changed the document ${key.id}, so event ${parked.position} cannot be applied ` +
        `out of order; "projections rebuild ${projection.name}" applies it in order`,
    );
  }
  await recordDecision(eventStore, 'ProjectionEventRetried', parked, actor);
  await readModels.unpark(projection.name, parked.position);
  return { position: parked.position, outcome: 'applied' };
};

/** Drops a parked event on purpose: the read model stays without it (`ProjectionEventSkipped`). */
export const skipParked = async (
  deps: ParkedDeps,
  parked: ParkedProjectionEvent,
  actor: ParkingActor = 'cli',
): Promise<void> => {
  await recordDecision(deps.eventStore, 'ProjectionEventSkipped', parked, actor);
  await deps.readModels.unpark(parked.projection, parked.position);
};
