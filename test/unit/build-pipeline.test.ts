import { expect } from 'chai';
import type { RecordedEvent } from '../../src/core/events.js';
import { pipelinedBatches } from '../../src/readmodels/build-pipeline.js';
import type { DocumentChange, ReadModelStore, StoredDocument } from '../../src/readmodels/port.js';
import type { Projection } from '../../src/readmodels/projection.js';
import { anEvent } from '../support/events.js';

interface Tally {
  count: number;
}

/** Counts the events of one document: any document read stale or folded twice shows in its count. */
const tally: Projection<Tally> = {
  name: 'build:tally',
  collection: { name: 'tally', fields: {}, indexes: [] },
  eventTypes: ['Counted'],
  documentKey: (event) => ({ tenantId: event.metadata.tenantId, id: 'one' }),
  evolve: (doc) => ({ count: (doc?.count ?? 0) + 1 }),
};

const counted = (position: number): RecordedEvent => {
  const event = anEvent('Counted', {}, 'acme');
  return {
    ...event,
    metadata: { ...event.metadata, schemaVersion: 1 },
    streamName: 'tally-one',
    streamVersion: position - 1,
    position,
  };
};

/** A store in memory whose commits wait for `gate` and refuse the changes `refuses` picks. */
const memoryStore = (refuses: (change: DocumentChange) => boolean = () => false) => {
  const documents = new Map<string, StoredDocument<unknown>>();
  const checkpoints: number[] = [];
  const state = { gate: Promise.resolve() };
  const store = {
    getMany: (_collection: string, keys: readonly { id: string }[]) =>
      Promise.resolve(keys.map((key) => documents.get(key.id) ?? null)),
    commit: async (_projection: string, changes: readonly DocumentChange[], checkpoint: number) => {
      await state.gate;
      if (changes.some(refuses)) throw new Error('refused');
      for (const change of changes) documents.set(change.id, { doc: change.doc, position: change.position });
      checkpoints.push(checkpoint);
    },
    ping: () => Promise.resolve(),
  };
  return { store: store as unknown as ReadModelStore, documents, checkpoints, state };
};

describe('a build’s pipelined batches', () => {
  it('folds a batch over the documents of the batch still being committed, and commits in order', async () => {
    const memory = memoryStore();
    let open = () => {};
    memory.state.gate = new Promise((resolve) => (open = resolve));
    const batches = pipelinedBatches(tally, memory.store, () => Promise.resolve());
    await batches.write([counted(1), counted(2)], 2);
    // The first commit is held: the second batch is folded over its document, not the table's (none).
    const second = batches.write([counted(3), counted(4)], 5);
    setTimeout(open, 5);
    await second;
    await batches.flush();
    expect(memory.documents.get('one')).to.deep.equal({ doc: { count: 4 }, position: 4 });
    expect(memory.checkpoints).to.deep.equal([2, 5]);
  });

  it('folds the next batch again from the table when the one before it could not be committed as folded', async () => {
    // The store refuses what the event at position 2 makes: that event is parked, the others applied.
    const memory = memoryStore((change) => change.position === 2);
    const parked: number[] = [];
    const batches = pipelinedBatches(tally, memory.store, (event) => {
      parked.push(event.position);
      return Promise.resolve();
    });
    await batches.write([counted(1), counted(2)], 2);
    await batches.write([counted(3), counted(4)], 4);
    await batches.flush();
    expect(parked).to.deep.equal([2]);
    expect(memory.documents.get('one')).to.deep.equal({ doc: { count: 3 }, position: 4 });
    expect(memory.checkpoints.at(-1)).to.equal(4);
  });
});
