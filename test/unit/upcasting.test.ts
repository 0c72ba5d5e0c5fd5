import { expect } from 'chai';
import { eventMetadata } from '../../src/core/command-handler.js';
import type { RecordedEvent } from '../../src/core/events.js';
import { checkRegistry, currentVersionIn, mergeEventSchemas, upcaster } from '../../src/core/upcasting.js';
import { eventSchemas } from '../../src/domains.js';
import { observationRecordedV1ToV2 } from '../../src/observations/upcasters.js';

const recorded = (type: string, data: unknown, schemaVersion: number | undefined): RecordedEvent => ({
  id: '0a1b2c3d-0000-4000-8000-000000000001',
  streamName: 'observation-t_1_o_1',
  streamVersion: 0,
  position: 7,
  type,
  data,
  metadata: {
    tenantId: 't_1',
    actor: 'apikey:k_1',
    correlationId: 'c',
    causationId: null,
    occurredAt: '2025-03-01T07:30:00.000Z',
    ...(schemaVersion === undefined ? {} : { schemaVersion }),
  } as RecordedEvent['metadata'],
});

/** ObservationRecorded as the first releases wrote it: absent instead of null, no attributes. */
const v1 = { observationId: 'o_1', observedAt: '2025-03-01T07:00:00.000Z', notes: 'an old fox' };
const v2 = {
  observationId: 'o_1',
  observedAt: '2025-03-01T07:00:00.000Z',
  position: null,
  locationId: null,
  visitId: null,
  notes: 'an old fox',
  attributes: {},
};
/** Today's shape, as every event stored before versions were counted has it, marked version 1. */
const todaysShape = {
  observationId: 'o_2',
  observedAt: '2026-05-01T07:30:00.000Z',
  position: { lat: 45.1, lon: 7.2, accuracyM: 5 },
  locationId: 'l_1',
  visitId: 'v_1',
  notes: 'near the creek',
  attributes: { species: 'fox', count: 2 },
};

/** What a store opened with the features' histories applies to what it reads. */
const upcast = upcaster(eventSchemas);

describe('upcasting events to the current schema', () => {
  describe('ObservationRecorded v1 -> v2', () => {
    it('turns absent optional fields into null and adds empty attributes, and says version 2', () => {
      const event = upcast(recorded('ObservationRecorded', v1, 1));
      expect(event.data).to.deep.equal(v2);
      expect(event.metadata.schemaVersion).to.equal(2);
      expect(event.metadata).to.deep.include({ tenantId: 't_1', occurredAt: '2025-03-01T07:30:00.000Z' });
      expect({ ...event, data: null, metadata: null }).to.deep.equal({
        ...recorded('ObservationRecorded', v1, 1),
        data: null,
        metadata: null,
      });
    });

    it('keeps a v1 position that was there', () => {
      const event = upcast(recorded('ObservationRecorded', { ...v1, position: { lat: 1, lon: 2 } }, 1));
      expect(event.data).to.deep.equal({ ...v2, position: { lat: 1, lon: 2 } });
    });

    it('reads data that already has the v2 shape, but says version 1, unchanged (existing data files)', () => {
      const event = upcast(recorded('ObservationRecorded', todaysShape, 1));
      expect(event.data).to.deep.equal(todaysShape);
      expect(event.metadata.schemaVersion).to.equal(2);
      expect(observationRecordedV1ToV2(observationRecordedV1ToV2(v1))).to.deep.equal(v2);
    });

    it('treats metadata without schemaVersion as version 1', () => {
      expect(upcast(recorded('ObservationRecorded', v1, undefined)).data).to.deep.equal(v2);
    });

    it('never changes what it was given', () => {
      const event = recorded('ObservationRecorded', { ...v1 }, 1);
      const before = structuredClone(event);
      upcast(event);
      expect(event).to.deep.equal(before);
    });
  });

  it('returns events at the current version, of newer versions, and of types without history as they are', () => {
    for (const event of [
      recorded('ObservationRecorded', todaysShape, 2),
      recorded('ObservationRecorded', { from: 'the future' }, 3),
      recorded('ObservationUpdated', { observationId: 'o_1', changes: {} }, 1),
      recorded('constructor', {}, 1),
      recorded('__proto__', {}, 1),
    ]) {
      expect(upcast(event)).to.equal(event);
    }
  });

  it('applies a chain of upcasters in order, from the stored version to the current one', () => {
    const chain = upcaster({
      Thing: {
        current: 3,
        upcasters: {
          1: (data) => ({ ...(data as object), b: 'added in 2' }),
          2: (data) => {
            const { a, ...rest } = data as { a: number };
            return { ...rest, renamed: a };
          },
        },
      },
    });
    expect(chain(recorded('Thing', { a: 1 }, 1)).data).to.deep.equal({ b: 'added in 2', renamed: 1 });
    expect(chain(recorded('Thing', { a: 1, b: 'x' }, 2)).data).to.deep.equal({ b: 'x', renamed: 1 });
    expect(chain(recorded('Thing', { a: 1 }, 1)).metadata.schemaVersion).to.equal(3);
  });

  it('refuses a registry with a gap in a chain', () => {
    expect(() => checkRegistry({ Thing: { current: 3, upcasters: { 1: (data) => data } } })).to.throw(
      'Thing: no upcaster from version 2 to 3',
    );
    expect(() => checkRegistry({ Thing: { current: 0, upcasters: {} } })).to.throw(/whole number/);
    expect(() => checkRegistry(eventSchemas)).not.to.throw();
  });

  it("merges the features' histories, and refuses a second history for a type", () => {
    expect(Object.keys(eventSchemas)).to.include('ObservationRecorded');
    expect(() =>
      mergeEventSchemas([eventSchemas, { ObservationRecorded: { current: 1, upcasters: {} } }]),
    ).to.throw('ObservationRecorded: two schema histories are registered');
    expect(currentVersionIn(eventSchemas, 'ObservationRecorded')).to.equal(2);
  });

  it('gives new events the current version of their type, 1 for a type without history', () => {
    expect(currentVersionIn(eventSchemas, 'ObservationRecorded')).to.equal(2);
    expect(currentVersionIn(eventSchemas, 'ObservationUpdated')).to.equal(1);
    expect(currentVersionIn(eventSchemas, 'toString')).to.equal(1);
    expect(currentVersionIn({}, 'ObservationRecorded')).to.equal(1);
    const context = {
      tenantId: 't_1',
      actor: 'test',
      correlationId: 'c',
      causationId: null,
      now: new Date('2026-01-01T00:00:00Z'),
      newEventId: () => 'e',
    };
    // The store stamps the version, from the histories it was opened with: a command leaves it to it.
    expect(eventMetadata(context)).not.to.have.property('schemaVersion');
  });
});
