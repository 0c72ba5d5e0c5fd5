import { createReadStream, readFileSync } from 'node:fs';
import { createInterface } from 'node:readline';
import {
  HistoryFormatError,
  verifyHistory,
  type HistoryReport,
  type VerifyHistoryOptions,
} from './verify-history.js';

/** The lines of a downloaded history file, read as they are needed: the file is never held whole. */
export const historyFileLines = (path: string): AsyncIterable<string> =>
  createInterface({ input: createReadStream(path, { encoding: 'utf8' }), crlfDelay: Infinity });

export const verifyHistoryFile = (path: string, options: VerifyHistoryOptions = {}): Promise<HistoryReport> =>
  verifyHistory(historyFileLines(path), options);

/** A digest or key file that is not one. */
export class DigestFileError extends Error {
  override name = 'DigestFileError';
}

/** Input the verifier cannot read, as against a history it finds broken: exit code 2, not 1. */
export const isBadInput = (error: unknown): boolean =>
  error instanceof HistoryFormatError ||
  error instanceof DigestFileError ||
  (error as { code?: string }).code === 'ENOENT';

/** A digest and the keys to check it, from the two files an auditor saved (docs/auditors.md §6). */
export const digestFiles = (digestPath: string, jwksPath: string): Required<VerifyHistoryOptions> => {
  const json = (path: string): unknown => {
    try {
      return JSON.parse(readFileSync(path, 'utf8')) as unknown;
    } catch (error) {
      if ((error as { code?: string }).code === 'ENOENT') throw error;
      throw new DigestFileError(`${path} is not a JSON file (${(error as Error).message})`);
    }
  };
  const digest = json(digestPath);
  const jwks = json(jwksPath) as { keys?: unknown };
  if (typeof digest !== 'object' || digest === null)
    throw new DigestFileError(`${digestPath} is not a digest`);
  if (!Array.isArray(jwks.keys)) throw new DigestFileError(`${jwksPath} is not a JWKS ({"keys": [...]})`);
  return { digest, jwks } as Required<VerifyHistoryOptions>;
};

/** One line for a person, worded as `obs audit verify` words its report. */
export const historyReportText = (report: HistoryReport): string => {
  const { fromPosition, toPosition } = report.range;
  const range = fromPosition === null ? 'no positions' : `positions ${fromPosition} to ${toPosition}`;
  const unproven =
    report.uncommitted > 0 ? `, ${report.uncommitted} with uncommitted secrets (hash taken as given)` : '';
  const summary = `${report.events} events in ${report.streams} streams (${range})${unproven}`;
  const { broken, digest } = report;
  if (broken) {
    const { streamName, streamVersion, position, reason } = broken;
    return `BROKEN after ${summary}: stream ${streamName}, version ${streamVersion}, position ${position}: ${reason}`;
  }
  if (digest && !digest.ok)
    return `BROKEN after ${summary}: the digest of position ${digest.position} (${digest.size} events): ${digest.reason}`;
  return digest
    ? `OK: ${summary}; every chain holds, and the first ${digest.size} events are those of the signed digest of position ${digest.position}`
    : `OK: ${summary}; every chain holds (no digest given: events left out at the end, or rewritten with every hash after them, would not show)`;
};
