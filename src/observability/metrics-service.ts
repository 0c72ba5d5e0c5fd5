import type { ConsumerStatus } from '../core/supervisor.js';
import type { EventFilter } from '../eventstore/port.js';
import { platformPartition } from '../readmodels/aggregate-projection.js';
import type { ReadModelStore } from '../readmodels/port.js';
import type { ProjectionHandle } from '../readmodels/handles.js';
import type { ConsumerProbe } from './metrics-consumers.js';

/** A catch-up consumer outside the projections (the revocations): what its lag is computed from. */
export interface CatchUpConsumer {
  status(): ConsumerStatus;
  readonly filter: EventFilter;
  checkpoint(): number;
}

/**
 * Where the catch-up consumers are: each projection runner and the revocations. The consumer groups have
 * theirs from the instrumented event store (metrics-eventstore.ts).
 */
export const serviceProbes = (
  running: readonly ProjectionHandle<unknown>[],
  revoked: CatchUpConsumer,
): ConsumerProbe[] => [
  ...running.map(({ projection, runner }): ConsumerProbe => ({
    name: runner.name,
    filter: projection.eventTypes === 'all' ? {} : { eventTypes: projection.eventTypes },
    checkpoint: () => Promise.resolve(runner.status().checkpoint),
    parked: () => Promise.resolve(runner.status().parked),
  })),
  {
    name: revoked.status().name,
    filter: revoked.filter,
    checkpoint: () => Promise.resolve(revoked.checkpoint()),
    // It never parks: a revocation it could not read would leave a credential working.
    parked: () => Promise.resolve(0),
  },
];

/** Counted up to this many per status: past it, the gauge says "at least". */
const countLimit = 10_000;

/** CV jobs not finished, across tenants, from the pending-jobs read model the worker's sweep reads. */
export const pendingCvJobs = async (readModels: ReadModelStore, collection: string) => {
  const count = async (status: 'queued' | 'running') =>
    (
      await readModels.listJson(collection, {
        tenantId: platformPartition,
        filters: [{ op: 'eq', field: 'status', value: status }],
        sort: { field: 'createdAt', direction: 'asc' },
        limit: countLimit,
      })
    ).length;
  const [queued, running] = await Promise.all([count('queued'), count('running')]);
  return { queued, running };
};
