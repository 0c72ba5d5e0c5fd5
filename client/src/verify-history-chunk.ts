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
   * False when a line failed a check inside the chunk, is not an exported event, or has a stream name or
   * hash with a tab or a line break (which the links' text cannot carry: the line-by-line pass takes those).
   */
  intact: boolean;
  events: number;
  uncommitted: number;
  firstPosition: number | null;
  lastPosition: number | null;
  /**
   * The links of the chunk's streams across its start, by shard (shardOf): per stream a line of its name, its
   * first line's version and previous hash (to be linked to the head before the chunk), and its last line's
   * version and hash (the head after it), tab-separated. Text, because one string crosses threads cheaply.
   */
  links: string[];
  /** Every event's hash, in order, 64 hex digits each: the leaves of the log tree, when a digest is checked. */
  hashes: string;
}

/** A buffer's bytes in an ArrayBuffer of their own, which can be transferred. */
export const ownArrayBuffer = (bytes: Buffer): ArrayBuffer =>
  bytes.byteOffset === 0 && bytes.byteLength === bytes.buffer.byteLength
    ? (bytes.buffer as ArrayBuffer)
    : (bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength) as ArrayBuffer);

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

const tabOrBreak = /[\t\n]/;

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
    if (tabOrBreak.test(hash)) return broken();
    if (span) {
      span.version = streamVersion;
      span.hash = hash;
    } else {
      if (tabOrBreak.test(streamName) || tabOrBreak.test(previousHash!)) return broken();
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
      if (!/^[0-9a-f]{64}$/.test(hash)) return broken();
      hashes.push(hash);
    }
  }
  // One array of parts per shard, joined once: cheaper than a string built per stream.
  const links: string[][] = Array.from({ length: shards }, () => []);
  for (const [streamName, span] of spans) {
    const { firstVersion, firstPreviousHash, version, hash } = span;
    links[shardOf(streamName, shards)]!.push(
      streamName,
      '\t',
      String(firstVersion),
      '\t',
      firstPreviousHash,
      '\t',
      String(version),
      '\t',
      hash,
      '\n',
    );
  }
  verdict.links = links.map((parts) => parts.join(''));
  verdict.hashes = hashes.join('');
  return verdict;
};

/**
 * The keeper of one shard's stream heads: takes each chunk's links of its streams (ChunkVerdict's `links`),
 * in file order, and says whether they follow on from the heads before, and how many streams they start.
 */
export const streamHeads = () => {
  const heads = new Map<string, { version: number; hash: string }>();
  return (links: string): { intact: boolean; newStreams: number } => {
    let newStreams = 0;
    for (let start = 0; start < links.length;) {
      const end = links.indexOf('\n', start);
      const [streamName, firstVersion, firstPreviousHash, version, hash] = links
        .slice(start, end)
        .split('\t') as [string, string, string, string, string];
      start = end + 1;
      const head = heads.get(streamName);
      if (head) {
        if (Number(firstVersion) !== head.version + 1 || firstPreviousHash !== head.hash)
          return { intact: false, newStreams };
        head.version = Number(version);
        head.hash = hash;
      } else {
        newStreams += 1;
        heads.set(streamName, { version: Number(version), hash });
      }
    }
    return { intact: true, newStreams };
  };
};
