import { breakOf, exportedEventOf, HistoryFormatError } from './verify-history.js';

/*
 * A history file verified in chunks side by side (in worker threads, verify-history-file.ts), with the
 * report verifyHistory would give. Each chunk's lines are checked as far as the chunk allows: everything but
 * each stream's first line there against that stream's last line in the chunks before. Those links go, shard
 * by shard of the streams, to the shard's keeper of stream heads, which takes them chunk after chunk in file
 * order; the chunks' positions are joined in order by the reading thread. So no thread holds every stream.
 */

/** A chunk's verdict. */
export interface ChunkVerdict {
  /**
   * False when a line failed a check inside the chunk, is not an exported event, or has what the links
   * cannot carry (a hash or previous hash that is not 64 bytes, a line break in a stream's name; with a
   * digest, a hash that is not 64 hex digits): the line-by-line pass takes those.
   */
  intact: boolean;
  events: number;
  uncommitted: number;
  firstPosition: number | null;
  lastPosition: number | null;
  /**
   * The links of the chunk's streams across its start, by shard (shardOf), as UTF-8 bytes (one transferable
   * buffer crosses threads at no cost): per stream its last line's hash (the head after the chunk, 64
   * bytes), its first line's previous hash (64 bytes, or 64 spaces for ""), its first and last versions and
   * its name: `<hash><previous hash><first version>,<last version>,<name>\n`.
   */
  links: Transferred[];
  /** Every event's hash, in order, 64 hex digits each: the leaves of the log tree, when a digest is checked. */
  hashes: string;
}

/**
 * Bytes that cross threads: the ArrayBuffer is transferred, not copied, so it must be one the sender made
 * for them alone (Buffer.allocUnsafeSlow), holding them from its start.
 */
export interface Transferred {
  buffer: ArrayBuffer;
  length: number;
}

export const transferred = (bytes: Buffer): Transferred => {
  if (bytes.byteOffset !== 0) throw new Error('only bytes at the start of their buffer are transferred');
  return { buffer: bytes.buffer as ArrayBuffer, length: bytes.length };
};

export const received = ({ buffer, length }: Transferred): Buffer => Buffer.from(buffer, 0, length);

/**
 * The shard of a stream's heads: FNV-1a of the end of its name (where a stream's id is), so that every
 * thread agrees.
 */
export const shardOf = (streamName: string, shards: number): number => {
  let hash = 0x811c9dc5;
  for (let index = Math.max(0, streamName.length - 16); index < streamName.length; index += 1)
    hash = Math.imul(hash ^ streamName.charCodeAt(index), 0x01000193);
  return (hash >>> 0) % shards;
};

/** A stream's lines in one chunk: its first line's version and previous hash, its last's version and hash. */
interface Span {
  firstVersion: number;
  firstPreviousHash: string;
  version: number;
  hash: string;
}

const isHash = /^[0-9a-f]{64}$/;
const genesisField = ' '.repeat(64);

/**
 * Each line of a buffer holding whole lines, decoded on its own: JSON.parse reads a fresh string about twice
 * as fast as a slice of a larger one.
 */
export function* linesOf(bytes: Buffer): Generator<string> {
  let start = 0;
  while (start < bytes.length) {
    const newline = bytes.indexOf(10, start);
    const end = newline === -1 ? bytes.length : newline;
    yield bytes.toString('utf8', start, end);
    start = end + 1;
  }
}

/**
 * The spans' links, by shard, written straight into a buffer per shard (about four times cheaper than
 * joining strings and encoding them).
 */
const linksOf = (spans: Map<string, Span>, shards: number): Transferred[] => {
  const shardOfSpan = new Map<Span, number>();
  // The most bytes a record can take: two hashes, two versions of up to 16 digits, two commas, the name in
  // UTF-8 (at most 3 bytes per UTF-16 unit) and a line break.
  const bounds = new Array<number>(shards).fill(0);
  for (const [streamName, span] of spans) {
    const shard = shardOf(streamName, shards);
    shardOfSpan.set(span, shard);
    bounds[shard]! += 128 + 34 + 3 * streamName.length + 1;
  }
  const buffers = bounds.map((bound) => Buffer.allocUnsafeSlow(bound));
  const lengths = new Array<number>(shards).fill(0);
  for (const [streamName, span] of spans) {
    const shard = shardOfSpan.get(span)!;
    const buffer = buffers[shard]!;
    let at = lengths[shard]!;
    at += buffer.write(span.hash, at, 'latin1');
    at += buffer.write(span.firstPreviousHash === '' ? genesisField : span.firstPreviousHash, at, 'latin1');
    at += buffer.write(`${span.firstVersion},${span.version},`, at, 'latin1');
    at += buffer.write(streamName, at, 'utf8');
    buffer[at] = 10;
    lengths[shard] = at + 1;
  }
  return buffers.map((buffer, shard) => transferred(buffer.subarray(0, lengths[shard])));
};

/** Verifies the lines of one chunk as verifyHistory does, but for what depends on the chunks before it. */
export const verifyChunk = (bytes: Buffer, withHashes: boolean, shards: number): ChunkVerdict => {
  const verdict: ChunkVerdict = {
    intact: true,
    events: 0,
    uncommitted: 0,
    firstPosition: null,
    lastPosition: null,
    links: [],
    hashes: '',
  };
  const spans = new Map<string, Span>();
  const hashes: string[] = [];
  const broken = () => ({ ...verdict, intact: false });
  for (const line of linesOf(bytes)) {
    if (line.trim() === '') continue;
    let event;
    try {
      event = exportedEventOf(line, 0);
    } catch (error) {
      if (error instanceof HistoryFormatError) return broken();
      throw error;
    }
    const { streamName, streamVersion, previousHash } = event;
    const hash = event.hash!;
    const span = spans.get(streamName);
    // A stream's first line here is checked as the first of its stream (its own previous hash taken as
    // given); its shard's keeper then checks that previous hash and the version against the head before.
    if (breakOf(event, span && { version: span.version, hash: span.hash }, verdict.lastPosition) !== null)
      return broken();
    // The links' fields are found by their places: each hash is 64 bytes, and a name has no line break.
    // The hash is one computed here but for events with uncommitted secrets, whose hash is taken as given.
    if (event.uncommitted?.length && Buffer.byteLength(hash) !== 64) return broken();
    if (span) {
      span.version = streamVersion;
      span.hash = hash;
    } else {
      const previousFits = previousHash === '' || Buffer.byteLength(previousHash!) === 64;
      if (!previousFits || streamName.includes('\n')) return broken();
      spans.set(streamName, {
        firstVersion: streamVersion,
        firstPreviousHash: previousHash!,
        version: streamVersion,
        hash,
      });
    }
    verdict.events += 1;
    if ((event.uncommitted?.length ?? 0) > 0) verdict.uncommitted += 1;
    verdict.firstPosition ??= event.position;
    verdict.lastPosition = event.position;
    if (withHashes) {
      // A leaf of the log tree is 64 hex digits; anything else is for the line-by-line pass to name.
      if (!isHash.test(hash)) return broken();
      hashes.push(hash);
    }
  }
  verdict.links = linksOf(spans, shards);
  verdict.hashes = hashes.join('');
  return verdict;
};

/**
 * The keeper of one shard's stream heads: takes each chunk's links of its streams (ChunkVerdict's `links`),
 * in file order, and says whether they follow on from the heads before, and how many streams they start.
 * It reads the links' bytes where they are, and keeps each head's version and hash in typed arrays by the
 * stream's slot: per stream only its name is a string, and no chunk's links stay alive.
 */
export const streamHeads = () => {
  const slots = new Map<string, number>();
  let versions = new Float64Array(1024);
  let hashes = Buffer.alloc(64 * 1024);
  const slotFor = (streamName: string): number => {
    const slot = slots.size;
    if (slot === versions.length) {
      const [moreVersions, moreHashes] = [new Float64Array(slot * 2), Buffer.alloc(64 * slot * 2)];
      moreVersions.set(versions);
      hashes.copy(moreHashes);
      [versions, hashes] = [moreVersions, moreHashes];
    }
    slots.set(streamName, slot);
    return slot;
  };
  /** Whether the 64 bytes of the links at `at` are the hash of the head in `slot`. */
  const isHeadHash = (links: Buffer, at: number, slot: number): boolean => {
    for (let index = 0, kept = slot * 64; index < 64; index += 1)
      if (links[at + index] !== hashes[kept + index]) return false;
    return true;
  };
  return (links: Buffer): { intact: boolean; newStreams: number } => {
    let newStreams = 0;
    for (let start = 0; start < links.length;) {
      // <hash><previous hash><first version>,<last version>,<name>\n: the versions in ASCII digits.
      let at = start + 128;
      let firstVersion = 0;
      while (links[at] !== 44) firstVersion = firstVersion * 10 + links[at++]! - 48;
      let version = 0;
      for (at += 1; links[at] !== 44; at += 1) version = version * 10 + links[at]! - 48;
      const end = links.indexOf(10, at + 1);
      const streamName = links.toString('utf8', at + 1, end);
      let slot = slots.get(streamName);
      if (slot === undefined) {
        newStreams += 1;
        slot = slotFor(streamName);
      } else if (firstVersion !== versions[slot]! + 1 || !isHeadHash(links, start + 64, slot)) {
        return { intact: false, newStreams };
      }
      versions[slot] = version;
      for (let index = 0, kept = slot * 64; index < 64; index += 1)
        hashes[kept + index] = links[start + index]!;
      start = end + 1;
    }
    return { intact: true, newStreams };
  };
};
