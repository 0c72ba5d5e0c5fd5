import { features } from '../src/features.js';
import type { RegisteredProjection } from '../src/readmodels/registered.js';

export type { ExportSpec, RegisteredProjection } from '../src/readmodels/registered.js';

/**
 * Every read model the service keeps: the service runs them all, the CLI rebuilds and exports them. Each
 * feature names its own (src/<feature>/feature.ts); the definitions are the other files of this folder.
 */
export const projections: readonly RegisteredProjection[] = features.flatMap(
  (feature) => feature.projections,
);

/** Names as typed on the command line: `cv-jobs` and `cv_jobs` are the same. */
const normalize = (name: string) => name.replace(/-/g, '_');

export const findProjection = (name: string): RegisteredProjection | undefined =>
  projections.find((entry) => entry.projection.name === normalize(name));

export const findExport = (name: string): RegisteredProjection | undefined =>
  projections.find((entry) => entry.export && normalize(entry.export.name) === normalize(name));
