import { hash, type JsonWebKey } from 'node:crypto';
import { logRoot, verifyDigestSignature, type SignedDigest } from './audit-proofs.js';
import type { HistoryEvent } from './types.js';

/*
 * A verifier of the NDJSON history download (`GET /v1/tenants/{t}/events`, Accept: application/x-ndjson),
 * written from docs/auditors.md ("The hash"), for auditors who trust neither the service nor its operator:
 * it recomputes every event's hash from the line alone and checks that each stream's lines chain. It reads
 * the lines as they come and holds only each stream's last version and hash, so a history of millions of
 * events verifies in memory that grows with the number of streams, not events.
 */

/** One line of the download: an event of the history API, with its hash and previous hash. */
export type ExportedEvent = HistoryEvent<unknown>;

export interface BrokenHistoryLink {
  streamName: string;
  streamVersion: number;
  position: number;
  reason: string;
}

export interface HistoryReport {
  ok: boolean;
  /** Events checked, up to the first broken link. */
  events: number;
  /** Streams with a checked event. */
  streams: number;
  /** Checked events whose hash could not be recomputed (`uncommitted` on their line): linked, not proven. */
  uncommitted: number;
  /** Positions of the first and last lines checked; null for an empty export. */
  range: { fromPosition: number | null; toPosition: number | null };
  broken?: BrokenHistoryLink;
  /** With a digest to check against (docs/auditors.md, "A download checked against a digest"). */
  digest?: DigestCheck;
}

/** Why a download does not match a digest: its signature, its log root at `size` lines, or too few lines. */
export type DigestProblem = 'signature' | 'log-root' | 'short';

export interface DigestCheck {
  ok: boolean;
  problem: DigestProblem | null;
  /** Why, in words: the signature's failure, or where the lines part from the digest. */
  reason: string | null;
  position: number;
  size: number;
}

export interface VerifyHistoryOptions {
  /**
   * A signed digest (`GET …/audit/digests/latest`) and the keys that verify it (`/.well-known/digest-keys.json`):
   * the download's first `size` lines must then hash to its log root, so that what a download leaves out or
   * rewrites shows, and not only a break inside it.
   */
  digest?: SignedDigest;
  jwks?: { keys: readonly JsonWebKey[] };
}

/** A line that is not an exported event: the input is not an export, rather than a broken history. */
export class HistoryFormatError extends Error {
  constructor(
    readonly line: number,
    problem: string,
  ) {
    super(`line ${line}: ${problem}`);
    this.name = 'HistoryFormatError';
  }
}

/**
 * JSON with the keys of every object sorted by UTF-16 code units (as Array.prototype.sort compares), no
 * whitespace, and JSON.stringify's encoding of strings and numbers: the text every hash is taken over.
 */
export const canonicalJson = (value: unknown): string => {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (value === null || typeof value !== 'object') return JSON.stringify(value);
  const record = value as Record<string, unknown>;
  const members = Object.keys(record)
    .sort()
    .filter((key) => record[key] !== undefined)
    .map((key) => `${JSON.stringify(key)}:${canonicalJson(record[key])}`);
  return `{${members.join(',')}}`;
};

/**
 * Whether JSON.stringify already writes the value canonically: every object's keys in sorted order. The
 * service exports what it stored in canonical form, so this holds for nearly every line, and
 * JSON.stringify is several times cheaper than canonicalJson.
 */
const sortedAllTheWay = (value: unknown): boolean => {
  if (value === null || typeof value !== 'object') return true;
  if (Array.isArray(value)) {
    for (const item of value as unknown[]) if (!sortedAllTheWay(item)) return false;
    return true;
  }
  const record = value as Record<string, unknown>;
  const keys = Object.keys(record);
  for (let index = 0; index < keys.length; index += 1) {
    if (index > 0 && !(keys[index - 1]! < keys[index]!)) return false;
    if (!sortedAllTheWay(record[keys[index]!])) return false;
  }
  return true;
};

/** The hash of one exported event, chained to `previousHash`: docs/auditors.md, "The hash". */
export const exportedEventHash = (event: ExportedEvent, previousHash: string): string => {
  const { data, id, metadata, streamName, streamVersion, type } = event;
  // The members in sorted order, so that one JSON.stringify writes the canonical text whenever data and
  // metadata are canonical already, as the service exports them.
  const content = { data, id, metadata, previousHash, streamName, streamVersion, type };
  const text =
    sortedAllTheWay(data) && sortedAllTheWay(metadata) ? JSON.stringify(content) : canonicalJson(content);
  // One-shot hash (Node 20.12 on): a few times cheaper than a Hash object for input this short.
  return hash('sha256', text);
};

const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

const isCount = (value: unknown): value is number => Number.isSafeInteger(value) && (value as number) >= 0;

const nullableString = (value: unknown): boolean => value === null || typeof value === 'string';

const isString = (value: unknown): boolean => typeof value === 'string';

/** What each member of a line must be. */
const fieldChecks: Record<string, (value: unknown) => boolean> = {
  id: isString,
  type: isString,
  streamName: isString,
  streamVersion: isCount,
  position: isCount,
  data: (value) => value !== undefined,
  metadata: isRecord,
  hash: nullableString,
  previousHash: nullableString,
  uncommitted: (value) => value === undefined || Array.isArray(value),
};

/** fieldChecks, written out: it runs once a line, and the loop over the checks costs more than the checks. */
const looksExported = (event: Record<string, unknown>): boolean =>
  typeof event.id === 'string' &&
  typeof event.type === 'string' &&
  typeof event.streamName === 'string' &&
  isCount(event.streamVersion) &&
  isCount(event.position) &&
  event.data !== undefined &&
  isRecord(event.metadata) &&
  nullableString(event.hash) &&
  nullableString(event.previousHash) &&
  (event.uncommitted === undefined || Array.isArray(event.uncommitted));

/** The line as an exported event, or the reason it is not one. */
export const exportedEventOf = (line: unknown, number: number): ExportedEvent => {
  let value = line;
  if (typeof line === 'string') {
    try {
      value = JSON.parse(line);
    } catch {
      throw new HistoryFormatError(number, 'is not JSON');
    }
  }
  if (!isRecord(value)) throw new HistoryFormatError(number, 'is not a JSON object');
  const event = value;
  if (looksExported(event)) return event as unknown as ExportedEvent;
  const wrong = Object.keys(fieldChecks).filter((field) => !fieldChecks[field]!(event[field]));
  throw new HistoryFormatError(number, `is not an exported event (${wrong.join(', ')})`);
};

/** Why the event does not follow on from its stream's last (`head`), or null when it does. */
export const breakOf = (
  event: ExportedEvent,
  head: { version: number; hash: string } | undefined,
  lastPosition: number | null,
): string | null => {
  const { streamVersion: version, previousHash } = event;
  if (lastPosition !== null && event.position <= lastPosition)
    return `position ${event.position} comes after position ${lastPosition}: the export is out of commit order`;
  if (head && version !== head.version + 1)
    return `version ${head.version + 1} is missing: the next exported event is version ${version}`;
  if (previousHash === null) return `the previous hash is missing: the store has no version ${version - 1}`;
  if (head ? previousHash !== head.hash : version === 0 && previousHash !== '')
    return version === 0
      ? 'the previous hash of version 0 is not the genesis hash ""'
      : `the previous hash does not match the hash of version ${version - 1}`;
  if ((event.uncommitted?.length ?? 0) > 0) return event.hash === null ? 'the event has no hash' : null;
  return event.hash === exportedEventHash(event, previousHash) ? null : 'the event does not match its hash';
};

/** The report of a download with nothing in it yet, which a verifier fills as it reads. */
export const emptyReport = (): HistoryReport => ({
  ok: true,
  events: 0,
  streams: 0,
  uncommitted: 0,
  range: { fromPosition: null, toPosition: null },
});

/** Why the digest's signature does not verify against the keys, or null when it does. */
export const signatureProblemOf = (
  digest: SignedDigest,
  jwks: VerifyHistoryOptions['jwks'],
): string | null => {
  const signed = jwks ? verifyDigestSignature(digest, jwks) : { ok: false as const, reason: 'no keys' };
  return signed.ok ? null : `the digest's signature does not verify: ${signed.reason}`;
};

/** The report with the outcome of its check against a digest. */
export const withDigestCheck = (
  report: HistoryReport,
  digest: SignedDigest,
  problem: DigestProblem | null,
  reason: string | null,
): HistoryReport => ({
  ...report,
  ok: problem === null && report.ok,
  digest: { ok: problem === null, problem, reason, position: digest.position, size: digest.size },
});

/**
 * The download's first `size` event hashes, the leaves of the digest's log tree, as both verifiers take them
 * in file order: `add` answers false once they are all in and do not hash to its root; `outcome` gives the
 * report the digest's verdict at the end of the download (too short when leaves are missing).
 */
export const digestLeaves = (digest: SignedDigest | undefined) => {
  const tree = logRoot();
  return {
    add: (eventHash: string): boolean => {
      if (!digest || tree.size >= digest.size) return true;
      tree.add(eventHash);
      return tree.size < digest.size || tree.root() === digest.logRoot;
    },
    outcome: (report: HistoryReport): HistoryReport => {
      if (!digest) return report;
      if (tree.size >= digest.size) return withDigestCheck(report, digest, null, null);
      const short = `the download ends after ${tree.size} events; the digest commits to the first ${digest.size}`;
      return withDigestCheck(report, digest, 'short', short);
    },
  };
};

/**
 * Verifies an NDJSON history download, line by line (strings, or events already parsed), and names the
 * first broken link: positions must rise; in each stream, versions follow with no gap, each event's
 * `previousHash` is the hash of the one before it (`""` before version 0), and each recomputed hash equals
 * `hash`. A stream's first line may be at a later version (a download filtered by `stream` or `from`): its
 * chain is then proven from there on. Throws HistoryFormatError for a line that is not an exported event.
 */
export const verifyHistory = async (
  lines: AsyncIterable<string | ExportedEvent> | Iterable<string | ExportedEvent>,
  { digest, jwks }: VerifyHistoryOptions = {},
): Promise<HistoryReport> => {
  const heads = new Map<string, { version: number; hash: string }>();
  const report = emptyReport();
  const checked = (problem: DigestProblem | null, reason: string | null): HistoryReport =>
    withDigestCheck(report, digest!, problem, reason);
  // The signature first: a digest that does not verify proves nothing, whatever the lines say.
  const unsigned = digest ? signatureProblemOf(digest, jwks) : null;
  if (unsigned !== null) return checked('signature', unsigned);
  const leaves = digestLeaves(digest);
  let number = 0;
  for await (const line of lines) {
    number += 1;
    if (typeof line === 'string' && line.trim() === '') continue;
    const event = exportedEventOf(line, number);
    const head = heads.get(event.streamName);
    const reason = breakOf(event, head, report.range.toPosition);
    if (reason !== null) {
      const { streamName, streamVersion, position } = event;
      return { ...report, ok: false, broken: { streamName, streamVersion, position, reason } };
    }
    report.events += 1;
    if (!head) report.streams += 1;
    if ((event.uncommitted?.length ?? 0) > 0) report.uncommitted += 1;
    report.range.fromPosition ??= event.position;
    report.range.toPosition = event.position;
    heads.set(event.streamName, { version: event.streamVersion, hash: event.hash! });
    if (!leaves.add(event.hash!))
      return checked(
        'log-root',
        `the first ${digest!.size} events (to position ${event.position}) do not hash to the digest's log root: ` +
          'one of them was changed, added, removed or moved, or the download does not start at the beginning',
      );
  }
  return leaves.outcome(report);
};
