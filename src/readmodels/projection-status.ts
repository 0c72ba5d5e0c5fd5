import type { RecordedEvent } from '../core/events.js';
import { eventFilter } from './build-fold.js';
import type { BuildDeps } from './builds.js';
import type { Projection } from './projection.js';

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
