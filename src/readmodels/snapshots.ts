import { abandon, fold, prepare } from './build-fold.js';
import {
  BuildInputError,
  buildCheckpoint,
  listBuilds,
  saveBuild,
  snapshotCollection,
  untilText,
  type BuildDeps,
  type BuildOptions,
  type BuildOutcome,
  type BuildRecord,
  type Until,
} from './builds.js';
import type { CollectionSpec, ReadModelStore } from './port.js';
import type { Projection } from './projection.js';

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
