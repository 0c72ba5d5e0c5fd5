import { ConflictError, NotFoundError, ValidationError } from '../../src/core/errors.js';
import { visitDecider, type VisitEvent, type VisitFields } from '../../src/visits/decider.js';
import { deciderSpec } from '../support/decider-spec.js';

const given = deciderSpec(visitDecider);

const fields: VisitFields = {
  locationId: 'l_1',
  startedAt: '2026-05-01T07:00:00.000Z',
  endedAt: null,
  participants: ['ana', 'ben'],
  notes: null,
};
const created: VisitEvent = { type: 'VisitCreated', data: { visitId: 'v_1', ...fields } };
const submitted: VisitEvent = {
  type: 'VisitSubmitted',
  data: { visitId: 'v_1', observationIds: ['o_1'], ...fields },
};

describe('the visit decider', () => {
  describe('when a visit is created', () => {
    it('creates it with every field', () => {
      given([]).when({ type: 'CreateVisit', visitId: 'v_1', fields }).then([created]);
    });

    it('refuses the same id twice', () => {
      given([created]).when({ type: 'CreateVisit', visitId: 'v_1', fields }).thenThrows(ConflictError);
    });

    it('refuses an end before the start', () => {
      given([])
        .when({
          type: 'CreateVisit',
          visitId: 'v_1',
          fields: { ...fields, endedAt: '2026-05-01T06:00:00.000Z' },
        })
        .thenThrows(ValidationError);
    });
  });

  describe('when a visit is updated', () => {
    it('records only the fields that change', () => {
      given([created])
        .when({ type: 'UpdateVisit', patch: { notes: 'windy', participants: ['ana', 'ben'] } })
        .then([{ type: 'VisitUpdated', data: { visitId: 'v_1', changes: { notes: 'windy' } } }]);
    });

    it('records nothing when every field already has its value, arrays compared by content', () => {
      given([created])
        .when({ type: 'UpdateVisit', patch: { participants: ['ana', 'ben'], endedAt: null } })
        .then([]);
    });

    it('refuses an end before the start it already has', () => {
      given([created])
        .when({ type: 'UpdateVisit', patch: { endedAt: '2026-05-01T06:59:59.000Z' } })
        .thenThrows(ValidationError);
    });

    it('refuses a visit that does not exist', () => {
      given([])
        .when({ type: 'UpdateVisit', patch: { notes: 'x' } })
        .thenThrows(NotFoundError);
    });

    it('refuses a submitted visit', () => {
      given([created, submitted])
        .when({ type: 'UpdateVisit', patch: { notes: 'late' } })
        .thenThrows(ConflictError, /submitted/);
    });
  });

  describe('when a visit is submitted', () => {
    it('carries the whole visit and its observations', () => {
      given([created])
        .when({ type: 'SubmitVisit', observationIds: ['o_1'] })
        .then([submitted]);
    });

    it('carries the fields as updated', () => {
      given([created, { type: 'VisitUpdated', data: { visitId: 'v_1', changes: { notes: 'calm' } } }])
        .when({ type: 'SubmitVisit', observationIds: [] })
        .then([
          {
            type: 'VisitSubmitted',
            data: { visitId: 'v_1', observationIds: [], ...fields, notes: 'calm' },
          },
        ]);
    });

    it('refuses to submit twice', () => {
      given([created, submitted]).when({ type: 'SubmitVisit', observationIds: [] }).thenThrows(ConflictError);
    });
  });
});
