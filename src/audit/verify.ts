import type { KeyObject } from 'node:crypto';
import type { RecordedEvent } from '../core/events.js';
import { eventHash, genesisHash } from '../eventstore/hash-chain.js';
import type { EventStore } from '../eventstore/port.js';
import { digestStream, type AuditDigest } from './digest.js';
import { merkleBuilder, merkleLeaf } from './merkle.js';
import { logFailures, type StoredDigest } from './verify-log.js';

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

type Digest = StoredDigest & { position: number; version: number };

/*
 * What is verified is defined in commit order: walk the tenant's history by position, keep each stream's
 * head, and stop at the first event that is not its stream's next version or does not match its hash, or at
 * the first digest (checked once every event up to its position was) whose root is not that of the heads.
 * Holding every head costs memory in the number of streams, so the history is read stream by stream
 * (EventStore.readTenantByStream) and the same first broken link is worked out from each stream alone:
 *
 * - A stream whose versions run 0, 1, 2… at rising positions, each matching its hash, passes in commit
 *   order too. Otherwise let m be its first event, in version order, that does not follow on (a version
 *   missing, a position lower than the one before, or a hash), and t the event of lowest position from m
 *   on. In commit order the stream's first k events, those before m at positions below t's, pass; then t
 *   comes, and fails: as "version k is missing", unless t is m itself with version k, whose hash then fails.
 * - The first broken link is the stream break of lowest position, unless a digest of a position below it
 *   fails first. Up to that position every stream is whole, so each stream's head as of a digest is its last
 *   event at or below the digest's position, and the leaves come in stream-name order, as Merkle roots
 *   want them.
 * - A broken report also counts what commit order had checked by then: a second pass counts the events,
 *   and the streams with an event, below the break.
 */

interface StreamBreak extends BrokenLink {
  /** The first position commit order did not get past: the break's own. */
  cut: number;
}

/** The stream's first break in commit order, from what its version-order pass saw (see above). */
const breakOf = (
  streamName: string,
  passedPositions: readonly number[],
  lowest: { position: number; version: number },
): StreamBreak => {
  const passedBefore = passedPositions.filter((position) => position < lowest.position).length;
  const at = { streamName, position: lowest.position, cut: lowest.position };
  return lowest.version === passedBefore
    ? { ...at, version: lowest.version, reason: 'the event does not match its hash' }
    : {
        ...at,
        version: passedBefore,
        reason: `version ${passedBefore} is missing: the next stored event is version ${lowest.version}`,
      };
};

/**
 * Checks one stream at a time, in stream-name order, and gives each digest the stream's head as of the
 * digest's position. Holds one stream's positions (to place a break) and one node per Merkle level.
 */
const streamWalker = (tenantId: string, digests: readonly Digest[]) => {
  const roots = digests.map(() => merkleBuilder());
  let streamName: string | null = null;
  let covered = false;
  let head: { version: number; hash: string; position: number; leaf: string | null } | null = null;
  let passedPositions: number[] = [];
  let lowestFailed: { position: number; version: number } | null = null;
  let nextDigest = 0;
  let firstBreak: StreamBreak | null = null;

  /** The current head is what the digests of positions below `position` saw of this stream. */
  const giveHeadToDigestsBelow = (position: number) => {
    for (; nextDigest < digests.length && digests[nextDigest]!.upToPosition < position; nextDigest += 1) {
      if (!head || !covered) continue;
      head.leaf ??= merkleLeaf({ streamName: streamName!, version: head.version, hash: head.hash });
      roots[nextDigest]!.add(head.leaf);
    }
  };

  const endStream = () => {
    if (streamName === null) return;
    giveHeadToDigestsBelow(Infinity);
    if (lowestFailed) {
      const broken = breakOf(streamName, passedPositions, lowestFailed);
      if (!firstBreak || broken.cut < firstBreak.cut) firstBreak = broken;
    }
  };

  const startStream = (name: string) => {
    endStream();
    // Merkle leaves must come in the order merkleRoot sorts them; an adapter that breaks it must not pass.
    if (streamName !== null && !(streamName < name)) {
      throw new Error(`the event store gave stream ${name} after ${streamName}, out of name order`);
    }
    streamName = name;
    covered = name !== digestStream(tenantId);
    head = null;
    passedPositions = [];
    lowestFailed = null;
    nextDigest = 0;
  };

  const follows = (event: RecordedEvent): boolean => {
    const version = head ? head.version + 1 : 0;
    if (event.streamVersion !== version) return false;
    if (head && event.position <= head.position) return false;
    return event.hash === eventHash(head?.hash ?? genesisHash, event);
  };

  return {
    /** Events of the tenant, in stream-name then version order. */
    take: (event: RecordedEvent) => {
      if (event.streamName !== streamName) startStream(event.streamName);
      if (lowestFailed) {
        if (event.position < lowestFailed.position) {
          lowestFailed = { position: event.position, version: event.streamVersion };
        }
        return;
      }
      if (!follows(event)) {
        lowestFailed = { position: event.position, version: event.streamVersion };
        return;
      }
      giveHeadToDigestsBelow(event.position);
      head = { version: event.streamVersion, hash: event.hash!, position: event.position, leaf: null };
      passedPositions.push(event.position);
    },
    finish: (): { streamBreak: StreamBreak | null; roots: string[] } => {
      endStream();
      return { streamBreak: firstBreak, roots: roots.map((root) => root.root()) };
    },
  };
};

/**
 * How far commit order got before stopping at `cut`: the events below it, and the streams with one. A
 * second read of the whole tenant, which calls `onPage` after each page, as the first pass calls onProgress.
 */
const countBelow = async (eventStore: EventStore, tenantId: string, cut: number, onPage: () => void) => {
  let events = 0;
  const streams = { count: 0, last: null as string | null };
  for await (const page of eventStore.readTenantByStream(tenantId)) {
    onPage();
    for (const event of page) {
      if (event.position >= cut) continue;
      events += 1;
      if (event.streamName !== streams.last) {
        streams.count += 1;
        streams.last = event.streamName;
      }
    }
  }
  return { events, streams: streams.count };
};

/**
 * Checks a tenant's whole history, stream by stream: each stream's versions have no gaps and rise with
 * their positions, each event's hash matches its content and the hash before it, and each digest's Merkle
 * root matches the stream heads as of the position it names. Reports the first broken link in commit
 * order, exactly as a walk of the history by position would, in memory that does not grow with the streams.
 */
export const verifyTenant = async (
  eventStore: EventStore,
  tenantId: string,
  onProgress: (events: number) => void = () => undefined,
  /** The keys that may have signed digests (the keyring's digestJwks), by kid. */
  digestKeys: ReadonlyMap<string, KeyObject> = new Map(),
): Promise<VerifyReport> => {
  const digests: Digest[] = (await eventStore.readStream(digestStream(tenantId), { raw: true }))
    .map((event) => ({
      ...(event.data as AuditDigest),
      recordedAt: event.metadata.occurredAt,
      position: event.position,
      version: event.streamVersion,
    }))
    .sort((a, b) => a.upToPosition - b.upToPosition);
  const walker = streamWalker(tenantId, digests);
  let events = 0;
  let streams = 0;
  let lastStream: string | null = null;
  for await (const page of eventStore.readTenantByStream(tenantId)) {
    for (const event of page) {
      walker.take(event);
      if (event.streamName !== lastStream) streams += 1;
      lastStream = event.streamName;
    }
    events += page.length;
    onProgress(events);
  }
  const { streamBreak, roots } = walker.finish();
  // Version 2 digests also commit to the log tree, read in commit order: a second read, up to the newest.
  const logFailed = await logFailures(eventStore, tenantId, digests, digestKeys, () => onProgress(events));

  const cut = streamBreak?.cut ?? Infinity;
  const failureOf = (digest: Digest, index: number): string | null =>
    roots[index] !== digest.root
      ? `the digest of the stream heads up to position ${digest.upToPosition} does not match the history`
      : (logFailed[index] ?? null);
  const failedDigest = digests.findIndex(
    (digest, index) => digest.upToPosition < cut && failureOf(digest, index) !== null,
  );
  const broken: StreamBreak | null =
    failedDigest >= 0
      ? {
          streamName: digestStream(tenantId),
          version: digests[failedDigest]!.version,
          position: digests[failedDigest]!.position,
          reason: failureOf(digests[failedDigest]!, failedDigest)!,
          cut: digests[failedDigest]!.upToPosition + 1,
        }
      : streamBreak;
  if (!broken) return { tenantId, events, streams, digests: digests.length, broken: null };
  const { cut: brokenCut, ...link } = broken;
  return {
    tenantId,
    // Each page of the second pass is reported too, so that a caller's time budget covers it; with the
    // first pass's count, since a progress line should not count an event twice.
    ...(await countBelow(eventStore, tenantId, brokenCut, () => onProgress(events))),
    digests: digests.length,
    broken: link,
  };
};
