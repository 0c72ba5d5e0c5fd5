import { isDeepStrictEqual } from 'node:util';
import type { Decider, Envelope } from '../core/decider.js';
import { changeStamps, createdFrom, creationStamps } from '../core/decider.js';
import { ConflictError, NotFoundError } from '../core/errors.js';
import { mergePatch } from '../core/merge-patch.js';
import type {
  Attributes,
  Observation,
  ObservationCommand,
  ObservationEvent,
  ObservationFields,
  ObservationPatch,
  ObservationState,
} from './observation.js';
import { assertAttributesFit } from './observation.js';

/** The fields the patch really changes, with attributes merged into their new whole value. */
const changesOf = (current: Observation, patch: ObservationPatch): Partial<ObservationFields> => {
  const next: Partial<ObservationFields> = { ...patch };
  if (patch.attributes !== undefined)
    next.attributes = mergePatch(current.attributes, patch.attributes) as Attributes;
  return Object.fromEntries(
    Object.entries(next).filter(
      ([field, value]) => !isDeepStrictEqual(current[field as keyof Observation], value),
    ),
  );
};

/** The observation a state holds, or a 404. */
export const observationOf = (state: ObservationState): Observation => {
  if (state.status === 'absent') throw new NotFoundError('The observation does not exist');
  return state.observation;
};

const decide = (command: ObservationCommand, state: ObservationState): ObservationEvent[] => {
  switch (command.type) {
    case 'RecordObservation':
      if (state.status !== 'absent')
        throw new ConflictError(`Observation ${command.observationId} already exists`);
      assertAttributesFit(command.fields.attributes);
      return [
        { type: 'ObservationRecorded', data: { observationId: command.observationId, ...command.fields } },
      ];
    case 'UpdateObservation': {
      const observation = observationOf(state);
      const changes = changesOf(observation, command.patch);
      if (Object.keys(changes).length === 0) return [];
      if (changes.attributes) assertAttributesFit(changes.attributes);
      return [{ type: 'ObservationUpdated', data: { observationId: observation.id, changes } }];
    }
    case 'AttachMedia': {
      const observation = observationOf(state);
      // The same bytes again are the same medium: attaching them twice changes nothing.
      if (observation.media.some((media) => media.id === command.media.id)) return [];
      return [
        { type: 'ObservationMediaAttached', data: { observationId: observation.id, media: command.media } },
      ];
    }
    default: {
      const unknown: never = command;
      throw new Error(`Unknown command ${JSON.stringify(unknown)}`);
    }
  }
};

const evolve = (state: ObservationState, event: Envelope<ObservationEvent>): ObservationState => {
  const at = event.metadata.occurredAt;
  switch (event.type) {
    case 'ObservationRecorded': {
      return {
        status: 'recorded',
        observation: {
          ...createdFrom(event, 'observationId'),
          media: [],
          ...creationStamps(event),
        },
      };
    }
    case 'ObservationUpdated':
      if (state.status === 'absent') return state;
      return {
        status: 'recorded',
        observation: { ...state.observation, ...event.data.changes, ...changeStamps(event) },
      };
    case 'ObservationMediaAttached':
      if (state.status === 'absent') return state;
      return {
        status: 'recorded',
        observation: {
          ...state.observation,
          media: [...state.observation.media, { ...event.data.media, addedAt: at }],
          ...changeStamps(event),
        },
      };
    default: {
      const unknown: never = event;
      throw new Error(`Unknown event ${JSON.stringify(unknown)}`);
    }
  }
};

export const observationDecider: Decider<ObservationState, ObservationCommand, ObservationEvent> = {
  aggregate: 'observation',
  initialState: () => ({ status: 'absent' }),
  decide,
  evolve,
};
