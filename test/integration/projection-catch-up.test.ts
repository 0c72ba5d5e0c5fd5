import { expect } from 'chai';
import Database from 'better-sqlite3';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { observationsProjection } from '../../projections/observations.js';
import { streamHeadsProjection } from '../../projections/stream-heads.js';
import type { EventStore } from '../../src/eventstore/port.js';
import { openSqliteEventStore } from '../../src/eventstore/sqlite.js';
import { bulkCatchUpEvents, collectionIndexes } from '../../src/readmodels/deferred-indexes.js';
import type { ReadModelStore } from '../../src/readmodels/port.js';
import type { Projection } from '../../src/readmodels/projection.js';
import type { RecordedEvent } from '../../src/core/events.js';
import { applyBatch, projectionRunner } from '../../src/readmodels/runner.js';
import { openSqliteReadModels } from '../../src/readmodels/sqlite.js';
import { anEvent, anObservationRecorded, uniqueTenant } from '../support/events.js';

/** The secondary indexes SQLite holds for a read-model table. */
const indexesOf = (file: string, table: string): string[] => {
  const db = new Database(file, { readonly: true });
  try {
    return (
      db
        .prepare("SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = ? AND sql IS NOT NULL")
        .pluck()
        .all(table) as string[]
    ).sort();
  } finally {
    db.close();
  }
};

const declaredIndexes = observationsProjection.collection.indexes.length;

/** `count` observations, each recorded then updated, appended 500 streams at a time. */
const seedObservations = async (eventStore: EventStore, tenantId: string, count: number) => {
  for (let start = 0; start < count; start += 500) {
    const appends: Promise<unknown>[] = [];
    for (let i = start; i < Math.min(count, start + 500); i += 1) {
      const { event, stream, observationId } = anObservationRecorded(tenantId, { notes: `n${i}` });
      const updated = anEvent('ObservationUpdated', { observationId, changes: { notes: `u${i}` } }, tenantId);
      appends.push(eventStore.appendToStream(stream, [event, updated], 'no_stream'));
    }
    await Promise.all(appends);
  }
};

describe('Projection catch-up from nothing', function () {
  this.timeout(120_000);
  let dir: string;
  let eventStore: EventStore;
  let readModels: ReadModelStore;
  let readModelsFile: string;
  const tenantId = uniqueTenant();

  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'catch-up-'));
    eventStore = openSqliteEventStore(join(dir, 'events.db'));
    readModelsFile = join(dir, 'readmodels.db');
    readModels = openSqliteReadModels(readModelsFile);
  });

  afterEach(async () => {
    await readModels.close();
    await eventStore.close();
    rmSync(dir, { recursive: true, force: true });
  });

  describe('when the backlog is short', () => {
    it('creates the indexes at once', async () => {
      await seedObservations(eventStore, tenantId, 10);
      await collectionIndexes(observationsProjection.collection, { eventStore, readModels }).ensure(0);
      expect(indexesOf(readModelsFile, 'rm_observations')).to.have.length(declaredIndexes);
    });
  });

  describe('when the backlog is long', () => {
    it('leaves the indexes out until the runner has caught up, then adds them', async () => {
      await seedObservations(eventStore, tenantId, bulkCatchUpEvents / 2 + 1);
      const indexes = collectionIndexes(observationsProjection.collection, { eventStore, readModels });
      await indexes.ensure(0);
      expect(indexesOf(readModelsFile, 'rm_observations')).to.deep.equal([]);
      await indexes.afterBatch(500, 500, 500);
      expect(indexesOf(readModelsFile, 'rm_observations')).to.deep.equal([]);
      await indexes.afterBatch(500, 500, await eventStore.headPosition());
      expect(indexesOf(readModelsFile, 'rm_observations')).to.have.length(declaredIndexes);
    });

    it('keeps them when the runner resumes from a checkpoint', async () => {
      await seedObservations(eventStore, tenantId, bulkCatchUpEvents / 2 + 1);
      await collectionIndexes(observationsProjection.collection, { eventStore, readModels }).ensure(42);
      expect(indexesOf(readModelsFile, 'rm_observations')).to.have.length(declaredIndexes);
    });

    it('projects every document, and the caught-up read model has its indexes and answers lists', async () => {
      // Whole pages of 500 events: the last one is full, and nothing follows it to say the end was reached.
      const count = bulkCatchUpEvents / 2 + 250;
      await seedObservations(eventStore, tenantId, count);
      const runner = projectionRunner(observationsProjection, {
        eventStore,
        readModels,
        logger: pino({ level: 'silent' }),
      });
      await runner.start();
      try {
        expect(await runner.waitFor(await eventStore.headPosition(), 60_000)).to.equal(true);
      } finally {
        await runner.stop();
      }
      expect(indexesOf(readModelsFile, 'rm_observations')).to.have.length(declaredIndexes);
      const listed = await readModels.list<{ notes: string }>('observations', {
        tenantId,
        filters: [],
        sort: { field: 'createdAt', direction: 'asc' },
        limit: count + 1,
      });
      expect(listed).to.have.length(count);
      expect(new Set(listed.map((observation) => observation.notes)).size).to.equal(count);
      expect(listed.every((observation) => observation.notes.startsWith('u'))).to.equal(true);
    });
  });

  describe('when a batch begins a document it does not read first', () => {
    /** Applies a batch as the runner does, reading documents through `reader`, and commits it. */
    const projecting =
      <D>(projection: Projection<D>, reader: Pick<ReadModelStore, 'getMany'>) =>
      async (events: readonly RecordedEvent[]) =>
        readModels.commit(
          projection.name,
          await applyBatch(projection, reader, events),
          events.at(-1)!.position,
        );

    it('never puts an older state over a newer stored one on redelivery', async () => {
      const { event, stream, observationId } = anObservationRecorded(tenantId, { notes: 'first' });
      const update = (notes: string) =>
        anEvent('ObservationUpdated', { observationId, changes: { notes } }, tenantId);
      await eventStore.appendToStream(stream, [event, update('second'), update('third')], 'no_stream');
      const all = (await eventStore.readAll({})).events;
      const project = projecting(observationsProjection, readModels);
      await readModels.ensureCollection(observationsProjection.collection);
      await project(all);
      await project(all.slice(0, 2));
      const stored = await readModels.get<{ notes: string }>('observations', { tenantId, id: observationId });
      expect(stored?.doc.notes).to.equal('third');
      expect(stored?.position).to.equal(all[2]!.position);
    });

    it('reads no document for a projection whose every event replaces it (the stream heads), and keeps the newest head', async () => {
      const { event, stream, observationId } = anObservationRecorded(tenantId, { notes: 'first' });
      const update = anEvent('ObservationUpdated', { observationId, changes: { notes: 'second' } }, tenantId);
      await eventStore.appendToStream(stream, [event, update], 'no_stream');
      const all = (await eventStore.readAll({})).events;
      let documentReads = 0;
      const counted: Pick<ReadModelStore, 'getMany'> = {
        getMany: (collection, keys) => {
          documentReads += keys.length;
          return readModels.getMany(collection, keys);
        },
      };
      const project = projecting(streamHeadsProjection, counted);
      await readModels.ensureCollection(streamHeadsProjection.collection);
      await project(all);
      await project(all.slice(0, 1));
      expect(documentReads).to.equal(0);
      const head = await readModels.get<{ version: number }>('stream_heads', { tenantId, id: stream });
      expect(head?.doc.version).to.equal(1);
      expect(head?.position).to.equal(all[1]!.position);
    });
  });
});
