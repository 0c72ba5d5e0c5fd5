import { NotFoundError, UnprocessableError } from '../core/errors.js';
import type { EventStore } from '../eventstore/port.js';
import type { AuditDigest } from './digest.js';
import { leafInputOf, tenantLog } from './log-events.js';
import { consistencyPath, inclusionPath, leafHash, type LeafHashes } from './log-tree.js';

/** The newest signed digest's tree: what proofs are asked against. */
export interface LogBound {
  size: number;
  upToPosition: number;
}

const hex = (nodes: Buffer[]) => nodes.map((node) => node.toString('hex'));

/**
 * The leaf hashes of the tenant's first `size` events, in commit order: 32 bytes each, so 32 MB for a million
 * (docs/auditors.md#6-digests-and-proofs). `watch` sees every event read, those after `size` included.
 */
const readLeaves = async (
  eventStore: EventStore,
  tenantId: string,
  size: number,
  upTo: number,
  watch?: (event: { id: string; hash?: string | undefined }, index: number) => void,
): Promise<LeafHashes> => {
  const bytes = Buffer.alloc(size * 32);
  let count = 0;
  for await (const page of tenantLog(eventStore, tenantId, 0, upTo)) {
    for (const event of page) {
      watch?.(event, count);
      if (count < size) leafHash(leafInputOf(event)).copy(bytes, count * 32);
      count += 1;
    }
    if (!watch && count >= size) break;
  }
  if (count < size)
    throw new Error(`the tenant's log holds ${count} events up to position ${upTo}, not ${size}`);
  return { count: size, at: (index) => bytes.subarray(index * 32, index * 32 + 32) };
};

const beyond = (path: string, bound: LogBound) =>
  new UnprocessableError([
    { path, message: `must be at most ${bound.size}, the size of the newest signed digest's tree` },
  ]);

/** RFC 9162 §2.1.3.1: the path from the event's leaf to the root of the tree of `size` leaves. */
export const inclusionProof = async (
  eventStore: EventStore,
  tenantId: string,
  eventId: string,
  size: number,
  bound: LogBound,
) => {
  if (size > bound.size) throw beyond('size', bound);
  let found: { index: number; hash: string } | null = null;
  const leaves = await readLeaves(eventStore, tenantId, size, bound.upToPosition, (event, index) => {
    if (event.id === eventId) found = { index, hash: event.hash ?? '' };
  });
  const leaf = found as { index: number; hash: string } | null;
  if (!leaf)
    throw new NotFoundError(`Event ${eventId} is not in the tenant's log as of its newest signed digest`);
  if (leaf.index >= size) {
    throw new UnprocessableError([
      {
        path: 'size',
        message: `must be above ${leaf.index}, the event's leaf index: it is not in a tree of ${size}`,
      },
    ]);
  }
  return {
    eventId,
    leafIndex: leaf.index,
    treeSize: size,
    hash: leaf.hash,
    path: hex(inclusionPath(leaves, leaf.index, 0, size)),
  };
};

/** RFC 9162 §2.1.4.1: what proves the tree of `to` leaves extends the tree of `from`. */
export const consistencyProof = async (
  eventStore: EventStore,
  tenantId: string,
  from: number,
  to: number,
  bound: LogBound,
) => {
  if (to > bound.size) throw beyond('to', bound);
  if (from > to) throw new UnprocessableError([{ path: 'from', message: 'must not be above to' }]);
  if (from === to) return { from, to, path: [] };
  const leaves = await readLeaves(eventStore, tenantId, to, bound.upToPosition);
  return { from, to, path: hex(consistencyPath(leaves, from, 0, to, true)) };
};

/** A digest as the API shows it: what its signature's payload says, and the signature. */
export const digestView = (tenantId: string, digest: AuditDigest, recordedAt: string) => ({
  tenantId,
  position: digest.upToPosition,
  size: digest.log?.size ?? null,
  logRoot: digest.log?.root ?? null,
  headsRoot: digest.root,
  streams: digest.streams,
  recordedAt,
  signature: digest.signature ?? null,
});
