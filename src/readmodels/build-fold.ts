import type { RecordedEvent } from '../core/events.js';
import type { EventFilter } from '../eventstore/port.js';
import {
  buildCheckpoint,
  saveBuild,
  type BuildDeps,
  type BuildOptions,
  type BuildProgress,
  type BuildRecord,
  type Until,
} from './builds.js';
import type { CollectionSpec } from './port.js';
import type { Projection } from './projection.js';
import { parkedRecord } from './parking.js';
import { pipelinedBatches } from './build-pipeline.js';

// The steps rebuilds and snapshots share: the fold of events into a build's collection, its preparation,
// and its removal.

export const eventFilter = (projection: Projection<unknown>, tenantId: string | null): EventFilter => ({
  ...(projection.eventTypes === 'all' ? {} : { eventTypes: projection.eventTypes }),
  ...(tenantId ? { tenantId } : {}),
});

const isBefore = (event: RecordedEvent, until: Until | null): boolean =>
  !until ||
  ('position' in until
    ? event.position <= until.position
    : Date.parse(event.metadata.occurredAt) <= Date.parse(until.time));

/**
 * Folds events into the build's collection from its checkpoint on, a batch at a time, each batch committed
 * with the checkpoint. Returns at the end of the store (or at `until`), or when aborted.
 */
export const fold = async (
  projection: Projection<unknown>,
  build: BuildRecord,
  deps: BuildDeps,
  options: BuildOptions,
  run: { from: number; target: number; events: number; startedAt: number; catchingUp: boolean },
): Promise<{ checkpoint: number; reachedEnd: boolean }> => {
  const { eventStore, readModels } = deps;
  const target: Projection<unknown> = {
    ...projection,
    name: buildCheckpoint(build),
    collection: { ...projection.collection, name: build.id },
  };
  const filter = eventFilter(projection, build.tenantId);
  const batchSize = options.batchSize ?? 1000;
  // An event the fold cannot apply is parked under the build's name; the swap makes those the live ones.
  const batches = pipelinedBatches(target, readModels, (event, error) =>
    readModels.parkEvent(parkedRecord(target.name, event, error, new Date())),
  );
  /** Where the batches read so far end; each is committed before `fold` returns. */
  let checkpoint = await readModels.getCheckpoint(target.name);
  const report = (phase: BuildProgress['phase']) =>
    options.onProgress?.({
      projection: projection.name,
      build: build.id,
      phase,
      from: run.from,
      checkpoint,
      target: run.target,
      events: run.events,
      elapsedMs: Date.now() - run.startedAt,
    });
  for (;;) {
    // The embedded stores answer synchronously: let timers, I/O and signals (Ctrl-C) in between batches.
    await new Promise((resolve) => setImmediate(resolve));
    if (options.signal?.aborted) {
      await batches.flush();
      return { checkpoint, reachedEnd: false };
    }
    if (build.until && 'position' in build.until && checkpoint >= build.until.position) {
      await batches.flush();
      return { checkpoint, reachedEnd: true };
    }
    const page = await eventStore.readAll({ after: checkpoint, maxCount: batchSize, filter });
    let events = page.events;
    let last = page.lastPosition;
    let reachedEnd = page.isEnd;
    if (build.until) {
      const until = build.until;
      const past = events.find((event) => !isBefore(event, until));
      if (past) {
        events = events.filter((event) => event.position < past.position);
        // Up to the first event past the moment, never beyond it.
        last = past.position - 1;
        reachedEnd = true;
      } else if ('position' in build.until && last >= build.until.position) {
        last = build.until.position;
        reachedEnd = true;
      }
    }
    if (last > checkpoint || events.length > 0) {
      await batches.write(events, last);
      checkpoint = last;
      run.events += events.length;
    }
    if (checkpoint >= run.target) run.catchingUp = true;
    report(run.catchingUp ? 'catching up' : 'building');
    if (reachedEnd) {
      await batches.flush();
      await readModels.ensureCollection(projection.collection, build.id);
      return { checkpoint, reachedEnd };
    }
  }
};

export const prepare = async (
  projection: Projection<unknown>,
  build: BuildRecord,
  deps: BuildDeps,
): Promise<{ from: number; target: number }> => {
  // The declared indexes come at the end (see `fold`): building them once is faster than keeping them.
  await deps.readModels.ensureCollection(projection.collection, build.id, { indexes: false });
  const from = await deps.readModels.getCheckpoint(buildCheckpoint(build));
  const head = await deps.eventStore.headPosition();
  const target = build.until && 'position' in build.until ? Math.min(head, build.until.position) : head;
  return { from, target };
};

/** Removes a build's collection and checkpoint, and records it as abandoned. */
export const abandon = async (
  deps: BuildDeps,
  spec: CollectionSpec,
  build: BuildRecord,
  clock: () => Date,
): Promise<void> => {
  await deps.readModels.ensureCollection(spec, build.id);
  await deps.readModels.reset(buildCheckpoint(build), build.id);
  for (const parked of await deps.readModels.listParked(buildCheckpoint(build))) {
    await deps.readModels.unpark(parked.projection, parked.position);
  }
  await deps.readModels.dropCollection(build.id);
  await saveBuild(deps.readModels, { ...build, status: 'abandoned', finishedAt: clock().toISOString() });
};
