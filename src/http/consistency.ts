import { UnavailableError } from '../core/errors.js';
import type { ProjectionRunner } from '../readmodels/runner.js';

/**
 * Read-your-writes for lists: with `minPosition` (the X-Position of the caller's write), wait until the
 * list's projection has applied it, for at most the configured bound; past it, 503 with Retry-After.
 */
export const awaitPosition = async (
  projection: ProjectionRunner,
  minPosition: number | undefined,
  timeoutMs: number,
): Promise<void> => {
  if (minPosition === undefined || (await projection.waitFor(minPosition, timeoutMs))) return;
  throw new UnavailableError(`The list has not caught up with position ${minPosition} yet; retry shortly`);
};
