import type { EventStore } from '../eventstore/port.js';
import { platformPartition } from './aggregate-projection.js';
import type { CollectionSpec, ReadModelStore } from './port.js';
import { textFields } from './fields.js';
import { listAll } from './list-all.js';

// The records of rebuilds and snapshots (rebuild.ts), and what a build is given and answers.

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
  fields: textFields('projection', 'kind', 'status', 'startedAt'),
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
  return listAll<BuildRecord, 'startedAt'>(readModels, buildsCollection.name, {
    tenantId: platformPartition,
    sortField: 'startedAt',
    pageSize: 500,
  });
};

export const saveBuild = async (readModels: ReadModelStore, build: BuildRecord): Promise<void> => {
  const key = { tenantId: platformPartition, id: build.id };
  // Positions only guard against going backwards: each save of a record is one step above the last.
  const stored = await readModels.get(buildsCollection.name, key);
  await readModels.commit(
    buildsCollection.name,
    [{ collection: buildsCollection.name, ...key, position: (stored?.position ?? 0) + 1, doc: build }],
    0,
  );
};

export const untilText = (until: Until | null): string =>
  until === null ? 'now' : 'position' in until ? `position ${until.position}` : until.time;
