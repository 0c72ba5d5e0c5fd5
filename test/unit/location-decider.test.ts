import { ConflictError, NotFoundError, ValidationError } from '../../src/core/errors.js';
import { locationDecider, type LocationEvent, type LocationFields } from '../../src/locations/decider.js';
import { deciderSpec } from '../support/decider-spec.js';

const given = deciderSpec(locationDecider);

const fields: LocationFields = {
  name: 'North meadow',
  position: { lat: 46.5, lon: 7.25 },
  boundary: null,
  attributes: { habitat: 'meadow', altitude: 1200 },
};
const created: LocationEvent = { type: 'LocationCreated', data: { locationId: 'l_1', ...fields } };
const deleted: LocationEvent = { type: 'LocationDeleted', data: { locationId: 'l_1' } };

describe('the location decider', () => {
  describe('when a location is created', () => {
    it('creates it with every field', () => {
      given([]).when({ type: 'CreateLocation', locationId: 'l_1', fields }).then([created]);
    });

    it('refuses the same id twice, also once deleted', () => {
      given([created]).when({ type: 'CreateLocation', locationId: 'l_1', fields }).thenThrows(ConflictError);
      given([created, deleted])
        .when({ type: 'CreateLocation', locationId: 'l_1', fields })
        .thenThrows(ConflictError);
    });

    it('refuses attributes larger than the bound', () => {
      given([])
        .when({
          type: 'CreateLocation',
          locationId: 'l_1',
          fields: { ...fields, attributes: { blob: 'x'.repeat(17 * 1024) } },
        })
        .thenThrows(ValidationError);
    });
  });

  describe('when a location is updated', () => {
    it('merges the attributes as a JSON merge patch and records only what changes', () => {
      given([created])
        .when({
          type: 'UpdateLocation',
          patch: { name: 'North meadow', attributes: { altitude: null, soil: 'loam' } },
        })
        .then([
          {
            type: 'LocationUpdated',
            data: { locationId: 'l_1', changes: { attributes: { habitat: 'meadow', soil: 'loam' } } },
          },
        ]);
    });

    it('records nothing when every field already has its value', () => {
      given([created])
        .when({
          type: 'UpdateLocation',
          patch: { position: { lat: 46.5, lon: 7.25 }, attributes: { habitat: 'meadow' } },
        })
        .then([]);
    });

    it('refuses a merge that adds up to more than the bound', () => {
      given([created])
        .when({ type: 'UpdateLocation', patch: { attributes: { blob: 'x'.repeat(17 * 1024) } } })
        .thenThrows(ValidationError);
    });

    it('refuses a location that does not exist, or no longer does', () => {
      given([])
        .when({ type: 'UpdateLocation', patch: { name: 'x' } })
        .thenThrows(NotFoundError);
      given([created, deleted])
        .when({ type: 'UpdateLocation', patch: { name: 'x' } })
        .thenThrows(NotFoundError);
    });
  });

  describe('when a location is deleted', () => {
    it('deletes it once', () => {
      given([created]).when({ type: 'DeleteLocation' }).then([deleted]);
      given([created, deleted]).when({ type: 'DeleteLocation' }).thenThrows(NotFoundError);
    });
  });
});
