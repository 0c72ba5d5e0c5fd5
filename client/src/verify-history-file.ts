import { createReadStream } from 'node:fs';
import { createInterface } from 'node:readline';
import { verifyHistory, type HistoryReport, type VerifyHistoryOptions } from './verify-history.js';

/** The lines of a downloaded history file, read as they are needed: the file is never held whole. */
export const historyFileLines = (path: string): AsyncIterable<string> =>
  createInterface({ input: createReadStream(path, { encoding: 'utf8' }), crlfDelay: Infinity });

export const verifyHistoryFile = (path: string, options: VerifyHistoryOptions = {}): Promise<HistoryReport> =>
  verifyHistory(historyFileLines(path), options);

/** One line for a person, worded as `obs audit verify` words its report. */
export const historyReportText = (report: HistoryReport): string => {
  const { fromPosition, toPosition } = report.range;
  const range = fromPosition === null ? 'no positions' : `positions ${fromPosition} to ${toPosition}`;
  const unproven =
    report.uncommitted > 0 ? `, ${report.uncommitted} with uncommitted secrets (hash taken as given)` : '';
  const summary = `${report.events} events in ${report.streams} streams (${range})${unproven}`;
  if (!report.broken) return `OK: ${summary}; every chain holds (digest check: not yet)`;
  const { streamName, streamVersion, position, reason } = report.broken;
  return `BROKEN after ${summary}: stream ${streamName}, version ${streamVersion}, position ${position}: ${reason}`;
};
