import type { Projection } from './projection.js';
import type { ProjectionRunner } from './runner.js';

/** A read model this process keeps: its definition (collection, document type) and the runner that follows it. */
export interface ProjectionHandle<D> {
  projection: Projection<D>;
  runner: ProjectionRunner;
}

/**
 * The service's projections, asked for by their definition: a route gets a typed handle, never a runner
 * found by a name. Asked at wiring time, so a projection no feature registers fails the start, not a request.
 */
export interface ProjectionHandles {
  of: <D>(projection: Projection<D>) => ProjectionHandle<D>;
}

export const projectionHandles = (running: readonly ProjectionHandle<unknown>[]): ProjectionHandles => {
  const runners = new Map(running.map(({ projection, runner }) => [projection, runner]));
  return {
    of: <D>(projection: Projection<D>) => {
      const runner = runners.get(projection);
      if (!runner) throw new Error(`No feature registers the projection ${projection.name}`);
      return { projection, runner };
    },
  };
};
