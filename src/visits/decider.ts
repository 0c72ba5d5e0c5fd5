import { isDeepStrictEqual } from 'node:util';
import type { Decider, DomainEvent } from '../core/decider.js';
import { changeStamps, createdFrom, creationStamps } from '../core/decider.js';
import { ConflictError, NotFoundError, ValidationError } from '../core/errors.js';

export interface Visit {
  id: string;
  tenantId: string;
  locationId: string;
  startedAt: string;
  endedAt: string | null;
  participants: string[];
  notes: string | null;
  status: 'draft' | 'submitted';
  /** The observations that belong to the visit, recorded when it is submitted. */
  observationIds: string[];
  submittedAt: string | null;
  createdAt: string;
  updatedAt: string;
  version: number;
}

export type VisitFields = Pick<Visit, 'locationId' | 'startedAt' | 'endedAt' | 'participants' | 'notes'>;

export type VisitEvent =
  | DomainEvent<'VisitCreated', { visitId: string } & VisitFields>
  | DomainEvent<'VisitUpdated', { visitId: string; changes: Partial<VisitFields> }>
  /** Carries the whole visit as submitted, so the webhook mapping needs nothing but the event. */
  | DomainEvent<'VisitSubmitted', { visitId: string; observationIds: string[] } & VisitFields>;

export const visitEventTypes: readonly VisitEvent['type'][] = [
  'VisitCreated',
  'VisitUpdated',
  'VisitSubmitted',
];

export type VisitState = { status: 'absent' } | { status: 'present'; visit: Visit };

export type VisitCommand =
  | { type: 'CreateVisit'; visitId: string; fields: VisitFields }
  | { type: 'UpdateVisit'; patch: Partial<VisitFields> }
  | { type: 'SubmitVisit'; observationIds: string[] };

const assertEndsAfterStart = ({ startedAt, endedAt }: Pick<VisitFields, 'startedAt' | 'endedAt'>): void => {
  if (endedAt !== null && endedAt < startedAt) {
    throw new ValidationError([{ path: 'endedAt', message: 'must not be before startedAt' }]);
  }
};

/** The visit a state holds, or a 404. */
export const visitOf = (state: VisitState): Visit => {
  if (state.status === 'absent') throw new NotFoundError('The visit does not exist');
  return state.visit;
};

const draft = (state: VisitState): Visit => {
  const visit = visitOf(state);
  if (visit.status === 'submitted')
    throw new ConflictError('The visit is submitted and can no longer change');
  return visit;
};

export const visitDecider: Decider<VisitState, VisitCommand, VisitEvent> = {
  aggregate: 'visit',
  initialState: () => ({ status: 'absent' }),
  decide: (command, state) => {
    switch (command.type) {
      case 'CreateVisit':
        if (state.status !== 'absent') throw new ConflictError(`Visit ${command.visitId} already exists`);
        assertEndsAfterStart(command.fields);
        return [{ type: 'VisitCreated', data: { visitId: command.visitId, ...command.fields } }];
      case 'UpdateVisit': {
        const visit = draft(state);
        assertEndsAfterStart({ ...visit, ...command.patch });
        const changes = Object.fromEntries(
          Object.entries(command.patch).filter(
            ([field, value]) => !isDeepStrictEqual(visit[field as keyof Visit], value),
          ),
        );
        return Object.keys(changes).length === 0
          ? []
          : [{ type: 'VisitUpdated', data: { visitId: visit.id, changes } }];
      }
      case 'SubmitVisit': {
        const { id, locationId, startedAt, endedAt, participants, notes } = draft(state);
        return [
          {
            type: 'VisitSubmitted',
            data: {
              visitId: id,
              observationIds: command.observationIds,
              locationId,
              startedAt,
              endedAt,
              participants,
              notes,
            },
          },
        ];
      }
    }
  },
  evolve: (state, event) => {
    const at = event.metadata.occurredAt;
    switch (event.type) {
      case 'VisitCreated': {
        return {
          status: 'present',
          visit: {
            ...createdFrom(event, 'visitId'),
            status: 'draft',
            observationIds: [],
            submittedAt: null,
            ...creationStamps(event),
          },
        };
      }
      case 'VisitUpdated':
        if (state.status === 'absent') return state;
        return {
          status: 'present',
          visit: { ...state.visit, ...event.data.changes, ...changeStamps(event) },
        };
      case 'VisitSubmitted':
        if (state.status === 'absent') return state;
        return {
          status: 'present',
          visit: {
            ...state.visit,
            status: 'submitted',
            observationIds: event.data.observationIds,
            submittedAt: at,
            ...changeStamps(event),
          },
        };
    }
  },
};
