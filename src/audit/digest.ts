import { VersionConflictError } from '../core/errors.js';
import { randomUUID } from 'node:crypto';
import { schedule as cronSchedule, type ScheduledTask } from 'node-cron';
import type { Logger } from 'pino';
import { streamHeadsProjection, type StreamHeadDoc } from '../../projections/stream-heads.js';
import { tenantsProjection } from '../../projections/tenants.js';
import { eventMetadata } from '../core/command-handler.js';
import { streamName } from '../core/streams.js';
import type { EventStore } from '../eventstore/port.js';
import { platformPartition } from '../readmodels/aggregate-projection.js';
import type { ReadModelStore } from '../readmodels/port.js';
import { listAll } from '../readmodels/list-all.js';
import type { Tenant } from '../tenants/decider.js';
import { merkleRoot } from './merkle.js';

/** A tenant's digests live in one stream of their own, chained like every other. */
export const digestStream = (tenantId: string): string => streamName('audit', tenantId, 'digests');

export interface AuditDigest {
  /** The digest commits to every stream of the tenant as of this position. */
  upToPosition: number;
  streams: number;
  root: string;
}

/** Every stream head of the tenant. */
const headsOf = (readModels: ReadModelStore, tenantId: string): Promise<StreamHeadDoc[]> =>
  listAll<StreamHeadDoc, 'position'>(readModels, streamHeadsProjection.collection.name, {
    tenantId,
    sortField: 'position',
    pageSize: 1000,
  });

/** Appends a digest for the tenant, unless nothing happened since its last one. */
export const recordDigest = async (
  eventStore: EventStore,
  readModels: ReadModelStore,
  tenantId: string,
  now: Date,
): Promise<AuditDigest | null> => {
  const heads = await headsOf(readModels, tenantId);
  const ownStream = digestStream(tenantId);
  const covered = heads.filter((head) => head.streamName !== ownStream);
  if (covered.length === 0) return null;
  const upToPosition = Math.max(...covered.map((head) => head.position));
  const [last] = (await eventStore.readStream(ownStream)).slice(-1);
  if (last && (last.data as AuditDigest).upToPosition >= upToPosition) return null;
  const digest: AuditDigest = { upToPosition, streams: covered.length, root: merkleRoot(covered) };
  await eventStore.appendToStream(
    ownStream,
    [
      {
        id: randomUUID(),
        type: 'AuditDigestRecorded',
        data: digest,
        metadata: eventMetadata({
          tenantId,
          actor: 'system:audit',
          correlationId: randomUUID(),
          causationId: null,
          now,
          newEventId: randomUUID,
        }),
      },
    ],
    last ? last.streamVersion : 'no_stream',
  );
  return digest;
};

/**
 * node-cron: a digest for every tenant on the schedule (AUDIT_DIGEST_SCHEDULE, hourly by default; null for
 * none).
 */
export const digestJob = (deps: {
  eventStore: EventStore;
  readModels: ReadModelStore;
  logger: Logger;
  schedule: string | null;
}) => {
  let task: ScheduledTask | null = null;
  let running: Promise<void> = Promise.resolve();
  const runOnce = async () => {
    const tenants = await deps.readModels.list<Tenant>(tenantsProjection.collection.name, {
      tenantId: platformPartition,
      filters: [],
      sort: { field: 'createdAt', direction: 'asc' },
      limit: 100_000,
    });
    for (const tenant of tenants) {
      await recordDigest(deps.eventStore, deps.readModels, tenant.id, new Date()).catch((error: unknown) => {
        // Another worker (EventStoreDB lets several run) appended this digest first: it is claimed once.
        if (error instanceof VersionConflictError) return;
        deps.logger.error({ err: error, tenantId: tenant.id }, 'audit digest failed');
      });
    }
  };
  return {
    runOnce,
    start: () => {
      if (deps.schedule === null) return;
      task = cronSchedule(deps.schedule, () => {
        running = running.then(runOnce, runOnce);
        return running;
      });
    },
    stop: async () => {
      await task?.destroy();
      await running.catch(() => undefined);
    },
  };
};
