import { readAggregate } from '../core/command-handler.js';
import { ConflictError, UnprocessableError, type FieldError } from '../core/errors.js';
import { streamName } from '../core/streams.js';
import type { EventStore } from '../eventstore/port.js';
import { locationDecider } from '../locations/decider.js';
import { visitDecider } from '../visits/decider.js';

/**
 * What an observation (or a visit) points at must exist in the same tenant: a location that is not
 * deleted, a visit that is still a draft. Unknown ones answer 422, the fields named; a submitted visit
 * answers 409, as any change to it does. Checked against the streams, so a just-created location counts.
 */
export const assertReferences = async (
  eventStore: EventStore,
  tenantId: string,
  { locationId, visitId }: { locationId?: string | null; visitId?: string | null },
): Promise<void> => {
  const problems: FieldError[] = [];
  if (locationId) {
    const { state } = await readAggregate(
      eventStore,
      locationDecider,
      streamName('location', tenantId, locationId),
    );
    if (state.status !== 'active')
      problems.push({ path: 'locationId', message: 'names no location of this tenant' });
  }
  if (visitId) {
    const { state } = await readAggregate(eventStore, visitDecider, streamName('visit', tenantId, visitId));
    if (state.status === 'absent')
      problems.push({ path: 'visitId', message: 'names no visit of this tenant' });
    else if (state.visit.status === 'submitted')
      throw new ConflictError(`Visit ${visitId} is submitted: it takes no more observations`);
  }
  if (problems.length > 0) throw new UnprocessableError(problems);
};
