import { expect } from 'chai';
import { ConflictError, NotFoundError, ValidationError } from '../../src/core/errors.js';
import { observationDecider } from '../../src/observations/decider.js';
import type { ObservationEvent, ObservationFields } from '../../src/observations/observation.js';
import { deciderSpec } from '../support/decider-spec.js';

const given = deciderSpec(observationDecider);

const fields: ObservationFields = {
  observedAt: '2026-05-01T07:30:00.000Z',
  position: { lat: 45, lon: 7 },
  locationId: null,
  visitId: null,
  notes: 'near the creek',
  attributes: { species: 'fox', count: 2 },
};
const recorded: ObservationEvent = { type: 'ObservationRecorded', data: { observationId: 'o_1', ...fields } };

describe('the observation decider', () => {
  describe('when an observation is recorded', () => {
    it('records it with every field', () => {
      given([])
        .when({ type: 'RecordObservation', tenantId: 't_test', observationId: 'o_1', fields })
        .then([recorded]);
    });

    it('refuses to record the same id twice', () => {
      given([recorded])
        .when({ type: 'RecordObservation', tenantId: 't_test', observationId: 'o_1', fields })
        .thenThrows(ConflictError);
    });

    it('refuses attributes larger than the bound', () => {
      given([])
        .when({
          type: 'RecordObservation',
          tenantId: 't_test',
          observationId: 'o_1',
          fields: { ...fields, attributes: { blob: 'x'.repeat(17 * 1024) } },
        })
        .thenThrows(ValidationError, /attributes/);
    });
  });

  describe('when an observation is patched', () => {
    it('records only the fields that change, with attributes merged key by key', () => {
      given([recorded])
        .when({
          type: 'UpdateObservation',
          patch: { notes: 'near the creek', attributes: { count: 3, species: null, sex: 'f' } },
        })
        .then([
          {
            type: 'ObservationUpdated',
            data: { observationId: 'o_1', changes: { attributes: { count: 3, sex: 'f' } } },
          },
        ]);
    });

    it('clears an optional field set to null', () => {
      given([recorded])
        .when({ type: 'UpdateObservation', patch: { position: null } })
        .then([{ type: 'ObservationUpdated', data: { observationId: 'o_1', changes: { position: null } } }]);
    });

    it('records nothing when the patch changes nothing', () => {
      given([recorded])
        .when({ type: 'UpdateObservation', patch: { notes: 'near the creek' } })
        .then([]);
    });

    it('answers not found for an observation that was never recorded', () => {
      given([])
        .when({ type: 'UpdateObservation', patch: { notes: 'x' } })
        .thenThrows(NotFoundError);
    });
  });

  describe('when events are folded', () => {
    it('builds the resource with its version and timestamps from the metadata', () => {
      const { state } = given([
        recorded,
        { type: 'ObservationUpdated', data: { observationId: 'o_1', changes: { notes: 'moved on' } } },
      ]);
      expect(state).to.deep.include({ status: 'recorded' });
      if (state.status !== 'recorded') return;
      expect(state.observation).to.deep.include({
        id: 'o_1',
        tenantId: 't_test',
        notes: 'moved on',
        version: 1,
        createdAt: '2026-01-01T00:00:00.000Z',
        updatedAt: '2026-01-01T00:00:01.000Z',
      });
    });
  });
});
