import { randomUUID } from 'node:crypto';
import type { CommandContext } from './command-handler.js';
import { ConflictError, VersionConflictError } from './errors.js';

/**
 * The context of the commands a worker issues on its own (`system:webhooks`, `system:cv-worker`): caused by
 * `causationId` (the event or delivery that made it act) and correlated by it, or by a new id without one.
 */
export const systemContextOf =
  (actor: `system:${string}`) =>
  (tenantId: string, now: Date, causationId: string | null): CommandContext => ({
    tenantId,
    actor,
    correlationId: causationId ?? randomUUID(),
    causationId,
    now,
    newEventId: () => randomUUID(),
  });

/** Another instance got there first: the command was refused because its stream had moved on. */
export const lostRace = (error: unknown): boolean =>
  error instanceof ConflictError || error instanceof VersionConflictError;
