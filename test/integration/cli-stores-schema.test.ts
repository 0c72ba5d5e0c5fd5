import { expect } from 'chai';
import { withStores } from '../../src/cli/stores.js';
import { loadConfig } from '../../src/config.js';
import { streamName } from '../../src/core/streams.js';
import { tempDir } from '../support/adapters.js';

/**
 * The command line opens its stores through withStores, as every `obs` command does, and nothing else
 * registers the features' schema histories: its appends must still be at the current versions.
 */
describe('a store opened by the command line', () => {
  it('writes new events at the current version of their type, and keeps a version a writer named', async () => {
    const { dir, remove } = tempDir();
    const metadata = {
      tenantId: 't_cli',
      actor: 'test',
      correlationId: 'c',
      causationId: null,
      occurredAt: '2026-05-01T09:30:00.000Z',
    };
    const recorded = {
      observationId: 'o_cli',
      observedAt: '2026-05-01T09:30:00.000Z',
      position: null,
      locationId: null,
      visitId: null,
      notes: 'written through the CLI path',
      attributes: {},
    };
    try {
      const stored = await withStores(
        { config: loadConfig({ DATA_DIR: dir }), create: true },
        async (stores) => {
          const stream = streamName('observation', 't_cli', 'o_cli');
          await stores.eventStore.appendToStream(
            stream,
            [
              {
                id: '0a1b2c3d-0000-4000-8000-0000000000c1',
                type: 'ObservationRecorded',
                data: recorded,
                metadata,
              },
              { id: '0a1b2c3d-0000-4000-8000-0000000000c2', type: 'ObservationDeleted', data: {}, metadata },
              {
                id: '0a1b2c3d-0000-4000-8000-0000000000c3',
                type: 'ObservationRecorded',
                data: { observationId: 'o_cli', observedAt: '2026-05-01T09:30:00.000Z', notes: 'old' },
                metadata: { ...metadata, schemaVersion: 1 },
              },
            ],
            'no_stream',
          );
          return stores.eventStore.readStream(stream, { raw: true });
        },
      );
      expect(stored.map((event) => [event.type, event.metadata.schemaVersion])).to.deep.equal([
        ['ObservationRecorded', 2],
        ['ObservationDeleted', 1],
        ['ObservationRecorded', 1],
      ]);
    } finally {
      remove();
    }
  });
});
