import { execFileSync } from 'node:child_process';
import { createWriteStream, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { defaultTuning, historyFileLines, verifyHistoryFile } from '../client/src/verify-history-file.js';
import { verifyHistory } from '../client/src/verify-history.js';
import { eventHash, genesisHash } from '../src/eventstore/hash-chain.js';
import { projectRoot } from './processes.js';
import { check, type Check } from './report.js';

/**
 * The `verify` phase (issue 29): the client's verifyHistoryFile (what its command and `obs audit verify
 * --file` run: the file's chunks in worker threads) over a downloaded history of BENCH_MILLION (1,000,000)
 * events in exported form, half as many streams of two events each, every stream's second event half the
 * file after its first, so that the verifier holds the heads of half the streams at once. Timed in a child
 * process of its own (for its peak RSS) against its baseline there: reading the file's lines, each decoded
 * on its own, and parsing each in one thread, the least any verifier must do, after one unmeasured read
 * that warms the page cache; then verifyHistory line by line in one thread, for comparison. Target: ≥ 0.5
 * of the baseline's events/s.
 *
 *   node --import tsx bench/verify-history.ts --child <history.ndjson>
 */

export interface VerifyHistoryResults {
  events: number;
  streams: number;
  readEventsPerSecond: number;
  /** verifyHistoryFile: the file's chunks in worker threads. */
  verifyEventsPerSecond: number;
  /** verify events/s ÷ read-and-parse events/s (target ≥ 0.5). */
  ratio: number;
  /** verifyHistory over the same lines, one after the other in this thread (for comparison). */
  lineByLineEventsPerSecond: number;
  workers: number;
  peakRssMb: number;
  intact: boolean;
}

/** One exported line, shaped as an observation's events are (data, metadata and a location). */
const exportedLine = (streamIndex: number, version: number, position: number, previousHash: string) => {
  const observationId = `o_${String(streamIndex).padStart(26, '0')}`;
  const event = {
    id: `e_${String(position).padStart(26, '0')}`,
    type: version === 0 ? 'ObservationRecorded' : 'ObservationUpdated',
    streamName: `observation-t_bench_${observationId}`,
    streamVersion: version,
    data: {
      location: { lat: 51.5 + (streamIndex % 1000) / 10_000, lon: -0.12 },
      notes: version === 0 ? 'a fox by the pond' : 'a red fox',
      observationId,
      observedAt: '2026-05-01T09:30:00.000Z',
    },
    metadata: {
      actor: 'apikey:k_bench',
      causationId: null,
      correlationId: `c_${position}`,
      occurredAt: '2026-05-01T09:30:00.000Z',
      schemaVersion: 1,
      tenantId: 't_bench',
    },
  };
  const hash = eventHash(previousHash, event);
  return { hash, text: JSON.stringify({ ...event, position, hash, previousHash }) };
};

/** Writes the history: streams 0…n/2−1 get version 0 in the first half, version 1 in the second. */
const writeHistory = async (file: string, events: number): Promise<number> => {
  const streams = Math.ceil(events / 2);
  const out = createWriteStream(file);
  const firstHashes: string[] = [];
  const write = (text: string) =>
    out.write(`${text}\n`) ? Promise.resolve() : new Promise<void>((resolve) => out.once('drain', resolve));
  for (let position = 1; position <= events; position += 1) {
    const second = position > streams;
    const streamIndex = second ? position - streams - 1 : position - 1;
    const line = exportedLine(
      streamIndex,
      second ? 1 : 0,
      position,
      second ? firstHashes[streamIndex]! : genesisHash,
    );
    if (!second) firstHashes.push(line.hash);
    await write(line.text);
  }
  await new Promise<void>((resolve, reject) =>
    out.end((error?: Error | null) => (error ? reject(error) : resolve())),
  );
  return streams;
};

const readAndParse = async (file: string): Promise<number> => {
  let count = 0;
  for await (const line of historyFileLines(file)) {
    if (line === '') continue;
    JSON.parse(line);
    count += 1;
  }
  return count;
};

const child = async (file: string) => {
  await readAndParse(file);
  const readStarted = performance.now();
  const events = await readAndParse(file);
  const readSeconds = (performance.now() - readStarted) / 1000;
  const verifyStarted = performance.now();
  const report = await verifyHistoryFile(file);
  const verifySeconds = (performance.now() - verifyStarted) / 1000;
  const lineByLineStarted = performance.now();
  const lineByLine = await verifyHistory(historyFileLines(file));
  const lineByLineSeconds = (performance.now() - lineByLineStarted) / 1000;
  process.stdout.write(
    JSON.stringify({
      events,
      streams: report.streams,
      readEventsPerSecond: Math.round(events / readSeconds),
      verifyEventsPerSecond: Math.round(report.events / verifySeconds),
      ratio: Number((readSeconds / verifySeconds).toFixed(2)),
      lineByLineEventsPerSecond: Math.round(lineByLine.events / lineByLineSeconds),
      workers: defaultTuning().workers,
      peakRssMb: Math.round(process.resourceUsage().maxRSS / 1024),
      intact: report.ok && report.events === events && lineByLine.ok,
    } satisfies VerifyHistoryResults),
  );
};

export const runVerifyHistory = async ({
  events,
  log,
}: {
  events: number;
  log: (message: string) => void;
}): Promise<VerifyHistoryResults> => {
  const dir = mkdtempSync(join(tmpdir(), 'bench-verify-'));
  try {
    const file = join(dir, 'history.ndjson');
    const streams = await writeHistory(file, events);
    log(`verify: wrote ${events} exported events in ${streams} streams`);
    const output = execFileSync(
      process.execPath,
      ['--import', 'tsx', 'bench/verify-history.ts', '--child', file],
      { cwd: projectRoot, encoding: 'utf8', maxBuffer: 1024 * 1024 },
    );
    const results = JSON.parse(output) as VerifyHistoryResults;
    log(
      `verify: ${results.verifyEventsPerSecond} events/s (${results.workers} worker threads) against ` +
        `${results.readEventsPerSecond} read and parsed (ratio ${results.ratio}, target ≥ 0.5); line by line ` +
        `${results.lineByLineEventsPerSecond} events/s; peak RSS ${results.peakRssMb} MB, ${results.intact ? 'intact' : 'NOT INTACT'}`,
    );
    return results;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
};

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href && process.argv[2] === '--child') {
  await child(process.argv[3]!);
}

/** Issue 29's target, and that memory stays bounded and the history intact. */
export const verifyHistoryChecks = (r: VerifyHistoryResults): Check[] => [
  check('history download verify ÷ read and parse (one thread)', r.ratio, '>=', 0.5),
  check(
    `history download verify peak RSS over ${r.streams.toLocaleString('en')} streams`,
    r.peakRssMb,
    '<',
    300,
    ' MB',
  ),
  check('history download verify broken links (sanity)', r.intact ? 0 : 1, '=', 0),
];
