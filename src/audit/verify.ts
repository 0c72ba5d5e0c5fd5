import type { RecordedEvent } from '../core/events.js';
import { eventHash, genesisHash } from '../eventstore/hash-chain.js';
import type { EventStore } from '../eventstore/port.js';
import { digestStream, type AuditDigest } from './digest.js';
import { merkleRoot, type StreamHead } from './merkle.js';

export interface BrokenLink {
  streamName: string;
  version: number;
  position: number;
  reason: string;
}

export interface VerifyReport {
  tenantId: string;
  events: number;
  streams: number;
  digests: number;
  broken: BrokenLink | null;
}

type Digest = AuditDigest & { position: number; version: number };

/**
 * Reads a tenant's whole history in commit order and checks it: each stream's versions have no gaps, each
 * event's hash matches its content and the hash before it, and each digest's Merkle root matches the
 * stream heads as of the position it names. Stops at the first broken link.
 */
export const verifyTenant = async (
  eventStore: EventStore,
  tenantId: string,
  onProgress: (events: number) => void = () => undefined,
): Promise<VerifyReport> => {
  const digests: Digest[] = (await eventStore.readStream(digestStream(tenantId), { raw: true }))
    .map((event) => ({
      ...(event.data as AuditDigest),
      position: event.position,
      version: event.streamVersion,
    }))
    .sort((a, b) => a.upToPosition - b.upToPosition);
  const heads = new Map<string, StreamHead>();
  const report = (broken: BrokenLink | null, events: number): VerifyReport => ({
    tenantId,
    events,
    streams: heads.size,
    digests: digests.length,
    broken,
  });
  const digestBroken = (digest: Digest): BrokenLink | null => {
    const covered = [...heads.values()].filter((head) => head.streamName !== digestStream(tenantId));
    return merkleRoot(covered) === digest.root
      ? null
      : {
          streamName: digestStream(tenantId),
          version: digest.version,
          position: digest.position,
          reason: `the digest of the stream heads up to position ${digest.upToPosition} does not match the history`,
        };
  };
  const check = (event: RecordedEvent): BrokenLink | null => {
    const previous = heads.get(event.streamName) ?? {
      streamName: event.streamName,
      version: -1,
      hash: genesisHash,
    };
    if (event.streamVersion !== previous.version + 1) {
      return {
        streamName: event.streamName,
        version: previous.version + 1,
        position: event.position,
        reason: `version ${previous.version + 1} is missing: the next stored event is version ${event.streamVersion}`,
      };
    }
    if (event.hash !== eventHash(previous.hash, event)) {
      return {
        streamName: event.streamName,
        version: event.streamVersion,
        position: event.position,
        reason: 'the event does not match its hash',
      };
    }
    heads.set(event.streamName, {
      streamName: event.streamName,
      version: event.streamVersion,
      hash: event.hash,
    });
    return null;
  };

  let count = 0;
  let nextDigest = 0;
  for (let after = 0; ;) {
    const page = await eventStore.readAll({ after, maxCount: 1000, filter: { tenantId }, raw: true });
    for (const event of page.events) {
      for (
        ;
        nextDigest < digests.length && digests[nextDigest]!.upToPosition < event.position;
        nextDigest += 1
      ) {
        const broken = digestBroken(digests[nextDigest]!);
        if (broken) return report(broken, count);
      }
      const broken = check(event);
      if (broken) return report(broken, count);
      count += 1;
    }
    onProgress(count);
    after = page.lastPosition;
    if (page.isEnd) break;
  }
  for (; nextDigest < digests.length; nextDigest += 1) {
    const broken = digestBroken(digests[nextDigest]!);
    if (broken) return report(broken, count);
  }
  return report(null, count);
};
