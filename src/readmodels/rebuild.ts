import { abandon, fold, prepare } from './build-fold.js';
import {
  buildCheckpoint,
  listBuilds,
  saveBuild,
  type BuildDeps,
  type BuildOptions,
  type BuildOutcome,
  type BuildProgress,
  type BuildRecord,
} from './builds.js';
import type { ParkedProjectionEvent } from './port.js';
import type { Projection } from './projection.js';
import { recordDecision } from './parking.js';

export {
  BuildInputError,
  buildCheckpoint,
  buildsCollection,
  listBuilds,
  snapshotCollection,
  untilText,
  type BuildDeps,
  type BuildOptions,
  type BuildOutcome,
  type BuildProgress,
  type BuildRecord,
  type Until,
} from './builds.js';
export { projectionStatus, type ProjectionStatus } from './projection-status.js';
export { buildSnapshot, dropSnapshot, findSnapshot } from './snapshots.js';

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
 *
 * The records of builds are in builds.ts, the fold they share in build-fold.ts, snapshots in snapshots.ts.
 */

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
