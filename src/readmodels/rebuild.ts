import type { RecordedEvent } from '../core/events.js';
import type { EventFilter, EventStore } from '../eventstore/port.js';
import { platformPartition } from './aggregate-projection.js';
import type { CollectionSpec, ParkedProjectionEvent, ReadModelStore } from './port.js';
import type { Projection } from './projection.js';
import { parkedRecord, recordDecision } from './parking.js';
import { commitBatch } from './runner.js';

/**
 * Rebuilds and snapshots of read models, from the event store, beside the live collections.
 *
 * A rebuild folds every event into a fresh physical collection under a checkpoint of its own (so an
 * interrupted rebuild resumes where it stopped), up to the head at its start, then catches up with the
 * current head, then swaps it in atomically (ReadModelStore.swap): the API reads the old collection until
 * that moment, and the live runners, which address the logical name, write the new one from then on.
 * A snapshot is built the same way up to a past moment (`until`) and is never swapped in.
 *
 * Builds are recorded as documents of the `projection_builds` collection, so that `projections status`
 * lists them and a second run finds the one to resume.
 */

/** An input the operator can fix (exit code 2 on the command line). */
export class BuildInputError extends Error {}

export type Until = { position: number } | { time: string };

export interface BuildRecord {
  /** The physical collection: `<collection>__b<time>` for a rebuild, `snapshot_<name>` for a snapshot. */
  id: string;
  projection: string;
  kind: 'rebuild' | 'snapshot';
  /** The `--into` name of a snapshot. */
  snapshot: string | null;
  tenantId: string | null;
  until: Until | null;
  status: 'building' | 'swapped' | 'complete' | 'abandoned';
  startedAt: string;
  finishedAt: string | null;
  /** Where a finished build stopped: the last position it reflects. */
  checkpoint: number | null;
}

export const buildsCollection: CollectionSpec = {
  name: 'projection_builds',
  fields: {
    projection: { path: 'projection', type: 'text' },
    kind: { path: 'kind', type: 'text' },
    status: { path: 'status', type: 'text' },
    startedAt: { path: 'startedAt', type: 'text' },
  },
  indexes: [['projection', 'startedAt'], ['startedAt']],
};

/** The checkpoint a build keeps while it runs, beside the live projection's. */
export const buildCheckpoint = (build: Pick<BuildRecord, 'id'>): string => `build:${build.id}`;

export const snapshotCollection = (name: string): string => `snapshot_${name}`;

export interface BuildDeps {
  eventStore: EventStore;
  readModels: ReadModelStore;
}

export interface BuildProgress {
  projection: string;
  build: string;
  phase: 'building' | 'catching up' | 'swapping' | 'done' | 'interrupted';
  /** Where this run started, where it is, and the head it aims for (the head at its start). */
  from: number;
  checkpoint: number;
  target: number;
  /** Events applied by this run. */
  events: number;
  elapsedMs: number;
}

export interface BuildOptions {
  /** Only this tenant's events and documents. */
  tenantId?: string;
  batchSize?: number;
  /** Aborting stops after the batch in flight; the build keeps its checkpoint and resumes on the next run. */
  signal?: AbortSignal;
  onProgress?: (progress: BuildProgress) => void;
  /** Drops an interrupted build of the same kind and starts again from the first event. */
  restart?: boolean;
  clock?: () => Date;
}

export interface BuildOutcome {
  status: 'swapped' | 'complete' | 'interrupted';
  build: BuildRecord;
  /** The checkpoint this run started from: above 0 when it resumed an interrupted build. */
  resumedFrom: number;
  checkpoint: number;
  events: number;
  /** Events the fold could not apply, parked (a rebuild's are the live projection's once it is swapped in). */
  parked: number;
  elapsedMs: number;
}

export const listBuilds = async (readModels: ReadModelStore): Promise<BuildRecord[]> => {
  await readModels.ensureCollection(buildsCollection);
  const builds: BuildRecord[] = [];
  let after: { value: string; id: string } | undefined;
  for (;;) {
    const page = await readModels.list<BuildRecord>(buildsCollection.name, {
      tenantId: platformPartition,
      filters: [],
      sort: { field: 'startedAt', direction: 'asc' },
      limit: 500,
      ...(after ? { after } : {}),
    });
    builds.push(...page);
    const last = page.at(-1);
    if (!last || page.length < 500) return builds;
    after = { value: last.startedAt, id: last.id };
  }
};

const saveBuild = async (readModels: ReadModelStore, build: BuildRecord): Promise<void> => {
  const key = { tenantId: platformPartition, id: build.id };
  // Positions only guard against going backwards: each save of a record is one step above the last.
  const stored = await readModels.get(buildsCollection.name, key);
  await readModels.commit(
    buildsCollection.name,
    [{ collection: buildsCollection.name, ...key, position: (stored?.position ?? 0) + 1, doc: build }],
    0,
  );
};

const eventFilter = (projection: Projection<unknown>, tenantId: string | null): EventFilter => ({
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
const fold = async (
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
    if (options.signal?.aborted) return { checkpoint, reachedEnd: false };
    if (build.until && 'position' in build.until && checkpoint >= build.until.position) {
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
      // An event the fold cannot apply is parked under the build's name; the swap makes those the live ones.
      await commitBatch(target, readModels, events, last, (event, error) =>
        readModels.parkEvent(parkedRecord(target.name, event, error, new Date())),
      );
      checkpoint = last;
      run.events += events.length;
    }
    if (checkpoint >= run.target) run.catchingUp = true;
    report(run.catchingUp ? 'catching up' : 'building');
    if (reachedEnd) {
      await readModels.ensureCollection(projection.collection, build.id);
      return { checkpoint, reachedEnd };
    }
  }
};

const prepare = async (
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
const abandon = async (
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

const samePlace = (a: ParkedProjectionEvent) => (b: ParkedProjectionEvent) => a.position === b.position;

/**
 * After a swap, the events the build parked are the live projection's parked events for the rebuilt scope
 * (the whole collection, or one tenant, up to the build's checkpoint): a live one the build applied is
 * recorded as retried and removed, one the build parked anew is recorded as parked. Answers how many the
 * build parked. Not atomic with the swap: a crash in between leaves the build's list for `abandon`.
 */
const adoptParked = async (
  deps: BuildDeps,
  projection: string,
  build: BuildRecord,
  checkpoint: number,
): Promise<number> => {
  const { readModels, eventStore } = deps;
  const built = await readModels.listParked(buildCheckpoint(build));
  const live = (await readModels.listParked(projection)).filter(
    (p) => p.position <= checkpoint && (build.tenantId === null || p.tenantId === build.tenantId),
  );
  for (const applied of live.filter((p) => !built.some(samePlace(p)))) {
    await recordDecision(eventStore, 'ProjectionEventRetried', applied, 'cli');
    await readModels.unpark(projection, applied.position);
  }
  for (const parked of built) {
    const adopted = { ...parked, projection };
    if (!live.some(samePlace(parked)))
      await recordDecision(eventStore, 'ProjectionEventParked', adopted, 'cli');
    await readModels.parkEvent(adopted);
    await readModels.unpark(parked.projection, parked.position);
  }
  return built.length;
};

/**
 * Rebuilds a read model blue/green, or (with `tenantId`) one tenant's documents of it: the fresh documents
 * replace that tenant's, the others stay. Resumes an interrupted rebuild of the same scope.
 */
export const rebuild = async (
  projection: Projection<unknown>,
  deps: BuildDeps,
  options: BuildOptions = {},
): Promise<BuildOutcome> => {
  const clock = options.clock ?? (() => new Date());
  const tenantId = options.tenantId ?? null;
  const builds = await listBuilds(deps.readModels);
  let build = builds.find(
    (b) =>
      b.kind === 'rebuild' &&
      b.status === 'building' &&
      b.projection === projection.name &&
      b.tenantId === tenantId,
  );
  if (build && options.restart) {
    await abandon(deps, projection.collection, build, clock);
    build = undefined;
  }
  if (!build) {
    const now = clock();
    build = {
      id: `${projection.collection.name}__b${now.getTime().toString(36)}`,
      projection: projection.name,
      kind: 'rebuild',
      snapshot: null,
      tenantId,
      until: null,
      status: 'building',
      startedAt: now.toISOString(),
      finishedAt: null,
      checkpoint: null,
    };
    await saveBuild(deps.readModels, build);
  }
  const { from, target } = await prepare(projection, build, deps);
  const run = { from, target, events: 0, startedAt: Date.now(), catchingUp: from >= target };
  let parkedOfBuild = 0;
  const outcome = async (status: BuildOutcome['status'], checkpoint: number, record: BuildRecord) => ({
    status,
    build: record,
    resumedFrom: from,
    checkpoint,
    events: run.events,
    parked:
      status === 'swapped'
        ? parkedOfBuild
        : (await deps.readModels.listParked(buildCheckpoint(record))).length,
    elapsedMs: Date.now() - run.startedAt,
  });
  const report = (phase: BuildProgress['phase'], checkpoint: number) =>
    options.onProgress?.({
      projection: projection.name,
      build: build.id,
      phase,
      from,
      checkpoint,
      target,
      events: run.events,
      elapsedMs: Date.now() - run.startedAt,
    });
  for (let refused = 0; ; refused += 1) {
    const { checkpoint, reachedEnd } = await fold(projection, build, deps, options, run);
    if (!reachedEnd) {
      report('interrupted', checkpoint);
      return await outcome('interrupted', checkpoint, build);
    }
    report('swapping', checkpoint);
    const swapped = await deps.readModels.swap({
      collection: projection.collection.name,
      projection: projection.name,
      source: build.id,
      sourceProjection: buildCheckpoint(build),
      ...(tenantId ? { tenantId } : {}),
    });
    if (!swapped) {
      // Refused: the live runner applied events past the build meanwhile. Catch up again, then retry.
      if (refused < 100) continue;
      const live = await deps.readModels.getCheckpoint(projection.name);
      throw new Error(
        `${projection.name}: the live checkpoint (${live}) stays past the rebuilt one (${checkpoint}); run again to resume`,
      );
    }
    parkedOfBuild = await adoptParked(deps, projection.name, build, checkpoint);
    const done: BuildRecord = { ...build, status: 'swapped', finishedAt: clock().toISOString(), checkpoint };
    await saveBuild(deps.readModels, done);
    report('done', checkpoint);
    return await outcome('swapped', checkpoint, done);
  }
};

/** Snapshot names: they become collection names. */
const snapshotName = /^[a-z][a-z0-9_]{0,62}$/;

/**
 * Builds a read model as of a past moment into the collection `snapshot_<into>`, beside the live one and
 * never swapped in: `export --from <into>` reads it. An interrupted build of the same snapshot resumes.
 */
export const buildSnapshot = async (
  projection: Projection<unknown>,
  deps: BuildDeps,
  options: BuildOptions & { into: string; until: Until },
): Promise<BuildOutcome> => {
  const clock = options.clock ?? (() => new Date());
  if (!snapshotName.test(options.into)) {
    throw new BuildInputError(
      `--into ${options.into}: a snapshot name is a lower-case letter, then letters, digits or _ (at most 63)`,
    );
  }
  const id = snapshotCollection(options.into);
  const tenantId = options.tenantId ?? null;
  const existing = (await listBuilds(deps.readModels)).find((b) => b.id === id && b.status !== 'abandoned');
  let build: BuildRecord;
  if (existing) {
    const same =
      existing.projection === projection.name &&
      existing.tenantId === tenantId &&
      JSON.stringify(existing.until) === JSON.stringify(options.until);
    if (existing.status === 'complete' || !same) {
      throw new BuildInputError(
        `A snapshot named ${options.into} exists already (${existing.projection}, until ${untilText(existing.until)}); ` +
          `drop it with "projections drop ${options.into}" or choose another name`,
      );
    }
    build = existing;
    if (options.restart) {
      await abandon(deps, projection.collection, build, clock);
      build = { ...build, status: 'building', startedAt: clock().toISOString() };
      await saveBuild(deps.readModels, build);
    }
  } else {
    build = {
      id,
      projection: projection.name,
      kind: 'snapshot',
      snapshot: options.into,
      tenantId,
      until: options.until,
      status: 'building',
      startedAt: clock().toISOString(),
      finishedAt: null,
      checkpoint: null,
    };
    await saveBuild(deps.readModels, build);
  }
  const { from, target } = await prepare(projection, build, deps);
  const run = { from, target, events: 0, startedAt: Date.now(), catchingUp: false };
  const { checkpoint, reachedEnd } = await fold(projection, build, deps, options, run);
  const parked = (await deps.readModels.listParked(buildCheckpoint(build))).length;
  const result = (status: BuildOutcome['status'], record: BuildRecord): BuildOutcome => ({
    status,
    build: record,
    resumedFrom: from,
    checkpoint,
    events: run.events,
    parked,
    elapsedMs: Date.now() - run.startedAt,
  });
  if (!reachedEnd) return result('interrupted', build);
  const done: BuildRecord = { ...build, status: 'complete', finishedAt: clock().toISOString(), checkpoint };
  await saveBuild(deps.readModels, done);
  options.onProgress?.({
    projection: projection.name,
    build: build.id,
    phase: 'done',
    from,
    checkpoint,
    target,
    events: run.events,
    elapsedMs: Date.now() - run.startedAt,
  });
  return result('complete', done);
};

/** The finished snapshot `name`, or an error that lists the ones there are. */
export const findSnapshot = async (readModels: ReadModelStore, name: string): Promise<BuildRecord> => {
  const snapshots = (await listBuilds(readModels)).filter(
    (b) => b.kind === 'snapshot' && b.status !== 'abandoned',
  );
  const found = snapshots.find((b) => b.snapshot === name);
  if (!found || found.status !== 'complete') {
    const known = snapshots
      .filter((b) => b.status === 'complete')
      .map((b) => `${b.snapshot} (${b.projection})`);
    throw new BuildInputError(
      found
        ? `The snapshot ${name} is not finished; run its "projections build" again to finish it`
        : `No snapshot named ${name}; snapshots: ${known.join(', ') || 'none'}`,
    );
  }
  return found;
};

/** Removes a snapshot, finished or not: its collection, its checkpoint and its record. */
export const dropSnapshot = async (
  deps: BuildDeps,
  name: string,
  specOf: (projection: string) => CollectionSpec | undefined,
  clock = () => new Date(),
): Promise<BuildRecord> => {
  const found = (await listBuilds(deps.readModels)).find(
    (b) => b.kind === 'snapshot' && b.snapshot === name && b.status !== 'abandoned',
  );
  const spec = found && specOf(found.projection);
  if (!found || !spec) throw new BuildInputError(`No snapshot named ${name}`);
  await abandon(deps, spec, found, clock);
  return found;
};

export const untilText = (until: Until | null): string =>
  until === null ? 'now' : 'position' in until ? `position ${until.position}` : until.time;

export interface ProjectionStatus {
  projection: string;
  checkpoint: number;
  /** Matching events after the checkpoint (counted up to a cap: then `lagEventsAtLeast`). */
  lagEvents: number;
  lagEventsAtLeast: boolean;
  /** Now minus the time of the first event not applied yet; 0 when caught up. */
  lagSeconds: number;
  lastError: { message: string; at: string } | null;
  /** Events parked now: applying them failed, and the projection went on without them. */
  parked: number;
}

/** Where a projection is, how far behind, and its runner's last error, as the stores tell it. */
export const projectionStatus = async (
  projection: Projection<unknown>,
  deps: BuildDeps,
  { now = new Date(), cap = 100_000 }: { now?: Date; cap?: number } = {},
): Promise<ProjectionStatus> => {
  const state = await deps.readModels.getProjectionState(projection.name);
  const filter = eventFilter(projection, null);
  let lagEvents = 0;
  let firstUnapplied: RecordedEvent | undefined;
  for (let after = state.checkpoint; lagEvents < cap;) {
    const page = await deps.eventStore.readAll({ after, maxCount: Math.min(5000, cap - lagEvents), filter });
    firstUnapplied ??= page.events[0];
    lagEvents += page.events.length;
    after = page.lastPosition;
    if (page.isEnd) break;
  }
  return {
    projection: projection.name,
    checkpoint: state.checkpoint,
    lagEvents,
    lagEventsAtLeast: lagEvents >= cap,
    lagSeconds: firstUnapplied
      ? Math.max(0, Math.round((now.getTime() - Date.parse(firstUnapplied.metadata.occurredAt)) / 1000))
      : 0,
    lastError: state.lastError,
    parked: (await deps.readModels.listParked(projection.name)).length,
  };
};
