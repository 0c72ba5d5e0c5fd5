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
import type { SigningKey } from '../auth/signing-keys.js';
import { signDigest } from './digest-signature.js';
import { tenantLog, leafInputOf } from './log-events.js';
import { emptyFrontier, logBuilder, type LogFrontier } from './log-tree.js';
import { merkleRoot } from './merkle.js';

/** A tenant's digests live in one stream of their own, chained like every other. */
export const digestStream = (tenantId: string): string => streamName('audit', tenantId, 'digests');

/** The key that signs digests: the keyring's newest active one, as for tokens. */
export type DigestSigningKey = Pick<SigningKey, 'kid' | 'privateKeyPem'>;

/** A digest as stored: version 1 had the heads root alone; version 2 adds the log tree and the signature. */
export interface AuditDigest {
  /** The digest commits to every stream of the tenant as of this position. */
  upToPosition: number;
  streams: number;
  /** The Merkle root over the stream heads (./merkle.ts). */
  root: string;
  /** The RFC 9162 tree over the tenant's events up to upToPosition (./log-tree.ts). */
  log?: { size: number; root: string };
  /** The roots of the log tree's full subtrees, largest first: the next digest extends the tree from them. */
  frontier?: string[];
  /** Compact JWS (ES256) over the payload of ./digest-signature.ts. */
  signature?: string;
}

export type SignedDigest = Required<AuditDigest>;

const frontierOf = (digest: AuditDigest | undefined): { after: number; frontier: LogFrontier } =>
  digest?.log && digest.frontier
    ? {
        after: digest.upToPosition,
        frontier: { size: digest.log.size, nodes: digest.frontier.map((node) => Buffer.from(node, 'hex')) },
      }
    : // No earlier version 2 digest: the tree is built over the whole history, once.
      { after: 0, frontier: emptyFrontier };

/** The log tree up to `upTo`, extended from the last digest's frontier: only the events since are read. */
const extendLog = async (
  eventStore: EventStore,
  tenantId: string,
  last: AuditDigest | undefined,
  upTo: number,
) => {
  const { after, frontier } = frontierOf(last);
  const tree = logBuilder(frontier);
  for await (const page of tenantLog(eventStore, tenantId, after, upTo)) {
    for (const event of page) tree.add(leafInputOf(event));
  }
  const { size, nodes } = tree.frontier();
  return {
    log: { size, root: tree.root().toString('hex') },
    frontier: nodes.map((node) => node.toString('hex')),
  };
};

/** Every stream head of the tenant. */
const headsOf = (readModels: ReadModelStore, tenantId: string): Promise<StreamHeadDoc[]> =>
  listAll<StreamHeadDoc, 'position'>(readModels, streamHeadsProjection.collection.name, {
    tenantId,
    sortField: 'position',
    pageSize: 1000,
  });

/** Appends a signed digest for the tenant, unless nothing happened since its last one. */
export const recordDigest = async (
  eventStore: EventStore,
  readModels: ReadModelStore,
  tenantId: string,
  now: Date,
  key: DigestSigningKey,
): Promise<SignedDigest | null> => {
  const heads = await headsOf(readModels, tenantId);
  const ownStream = digestStream(tenantId);
  const covered = heads.filter((head) => head.streamName !== ownStream);
  if (covered.length === 0) return null;
  const upToPosition = Math.max(...covered.map((head) => head.position));
  const [last] = (await eventStore.readStream(ownStream)).slice(-1);
  const lastDigest = last?.data as AuditDigest | undefined;
  if (lastDigest && lastDigest.upToPosition >= upToPosition) return null;
  const root = merkleRoot(covered);
  const { log, frontier } = await extendLog(eventStore, tenantId, lastDigest, upToPosition);
  const payload = {
    tenantId,
    position: upToPosition,
    size: log.size,
    logRoot: log.root,
    headsRoot: root,
    streams: covered.length,
    recordedAt: now.toISOString(),
  };
  const digest: SignedDigest = {
    upToPosition,
    streams: covered.length,
    root,
    log,
    frontier,
    signature: signDigest(key, payload),
  };
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
  /** The keyring's signing key now: it is read at each digest, so a rotation takes effect without a restart. */
  signingKey: () => DigestSigningKey;
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
      await recordDigest(deps.eventStore, deps.readModels, tenant.id, new Date(), deps.signingKey()).catch(
        (error: unknown) => {
          // Another worker (EventStoreDB lets several run) appended this digest first: it is claimed once.
          if (error instanceof VersionConflictError) return;
          deps.logger.error({ err: error, tenantId: tenant.id }, 'audit digest failed');
        },
      );
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
