import { execFileSync } from 'node:child_process';
import { createWriteStream, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { defaultTuning } from '../client/src/verify-history-file.js';
import { eventHash, genesisHash } from '../src/eventstore/hash-chain.js';
import { projectRoot } from './processes.js';
import { check, type Check } from './report.js';

/**
 * The `verify` phase (issue 29): the client's verifyHistoryFile (what its command and `obs audit verify
 * --file` run: the file's chunks in worker threads) over a downloaded history of BENCH_MILLION (1,000,000)
 * events in exported form, half as many streams of two events each, every stream's second event half the
 * file after its first, so that the verifier holds the heads of half the streams at once. Three passes, each
 * in a child process of its own (for its own peak RSS), after one unmeasured read that warms the page cache:
 * the baseline, reading the file's lines (each decoded on its own) and parsing each in one thread, the least
 * any verifier must do; verifyHistoryFile; and verifyHistory line by line in one thread, for comparison.
 * The first two alternate over three rounds. Target: ≥ 0.5 of the baseline's events/s.
 *
 *   node --import tsx bench/verify-history.ts --child <history.ndjson> read|file|lines <built client>
 */

export interface VerifyHistoryResults {
  events: number;
  streams: number;
  readEventsPerSecond: number;
  /** verifyHistoryFile: the file's chunks in worker threads. */
  verifyEventsPerSecond: number;
  /** verify events/s ÷ read-and-parse events/s (target ≥ 0.5): the median of the rounds' ratios. */
  ratio: number;
  roundRatios: number[];
  /** verifyHistory over the same lines, one after the other in one thread (for comparison). */
  lineByLineEventsPerSecond: number;
  workers: number;
  /** Peak RSS of each pass, each in a process of its own: the baseline, verifyHistoryFile, line by line. */
  readPeakRssMb: number;
  peakRssMb: number;
  lineByLinePeakRssMb: number;
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

/** The client's verifiers, from the client as its package ships it (see buildClient). */
type Client = typeof import('../client/src/verify-history-file.js') &
  typeof import('../client/src/verify-history.js');

const clientAt = async (dir: string): Promise<Client> =>
  ({
    ...((await import(pathToFileURL(join(dir, 'verify-history-file.js')).href)) as object),
    ...((await import(pathToFileURL(join(dir, 'verify-history.js')).href)) as object),
  }) as Client;

/**
 * The client compiled by tsc into `dir`, as `npm pack` builds it: the verifier's worker threads then run
 * the JavaScript an auditor runs, not TypeScript compiled by tsx as each worker starts.
 */
const buildClient = (dir: string): string => {
  const out = join(dir, 'client');
  const tsc = join(projectRoot, 'node_modules', 'typescript', 'bin', 'tsc');
  execFileSync(process.execPath, [tsc, '-p', 'client/tsconfig.json', '--outDir', out], { cwd: projectRoot });
  writeFileSync(join(out, 'package.json'), JSON.stringify({ type: 'module' }));
  return out;
};

const readAndParse = async ({ historyFileLines }: Client, file: string): Promise<number> => {
  let count = 0;
  for await (const line of historyFileLines(file)) {
    if (line === '') continue;
    JSON.parse(line);
    count += 1;
  }
  return count;
};

/** What one child measured: one of the three passes, alone in its process (for its own peak RSS). */
interface PassResult {
  events: number;
  streams: number;
  seconds: number;
  peakRssMb: number;
  ok: boolean;
}

type Pass = 'read' | 'file' | 'lines';

type PassRun = (client: Client, file: string) => Promise<Omit<PassResult, 'seconds' | 'peakRssMb'>>;

const passes: Record<Pass, PassRun> = {
  read: async (client, file) => ({ events: await readAndParse(client, file), streams: 0, ok: true }),
  file: (client, file) => client.verifyHistoryFile(file),
  lines: (client, file) => client.verifyHistory(client.historyFileLines(file)),
};

const child = async (file: string, pass: Pass, clientDir: string) => {
  const client = await clientAt(clientDir);
  // The page cache warmed by an unmeasured read, as for every pass.
  if (pass === 'read') await readAndParse(client, file);
  const started = performance.now();
  const { events, streams, ok } = await passes[pass](client, file);
  const seconds = (performance.now() - started) / 1000;
  const peakRssMb = Math.round(process.resourceUsage().maxRSS / 1024);
  process.stdout.write(JSON.stringify({ events, streams, ok, seconds, peakRssMb } satisfies PassResult));
};

const runPass = (file: string, pass: Pass, clientDir: string): PassResult =>
  JSON.parse(
    execFileSync(
      process.execPath,
      ['--import', 'tsx', 'bench/verify-history.ts', '--child', file, pass, clientDir],
      { cwd: projectRoot, encoding: 'utf8', maxBuffer: 1024 * 1024 },
    ),
  ) as PassResult;

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
    const clientDir = buildClient(dir);
    // The machine's speed drifts between passes, so the baseline and the verifier alternate, three rounds,
    // and each figure is the median of the rounds (the ratio, of the rounds' own ratios).
    const rounds = [1, 2, 3].map(() => ({
      read: runPass(file, 'read', clientDir),
      verified: runPass(file, 'file', clientDir),
    }));
    const lineByLine = runPass(file, 'lines', clientDir);
    const median = (values: number[]) => values.sort((a, b) => a - b)[Math.floor(values.length / 2)]!;
    const perSecond = (pass: PassResult) => Math.round(pass.events / pass.seconds);
    const [first] = rounds;
    const results: VerifyHistoryResults = {
      events: first!.read.events,
      streams: first!.verified.streams,
      readEventsPerSecond: median(rounds.map(({ read }) => perSecond(read))),
      verifyEventsPerSecond: median(rounds.map(({ verified }) => perSecond(verified))),
      ratio: Number(median(rounds.map(({ read, verified }) => read.seconds / verified.seconds)).toFixed(2)),
      roundRatios: rounds.map(({ read, verified }) => Number((read.seconds / verified.seconds).toFixed(2))),
      lineByLineEventsPerSecond: perSecond(lineByLine),
      workers: defaultTuning().workers,
      readPeakRssMb: Math.max(...rounds.map(({ read }) => read.peakRssMb)),
      peakRssMb: Math.max(...rounds.map(({ verified }) => verified.peakRssMb)),
      lineByLinePeakRssMb: lineByLine.peakRssMb,
      intact:
        lineByLine.ok && rounds.every(({ read, verified }) => verified.ok && verified.events === read.events),
    };
    log(
      `verify: ${results.verifyEventsPerSecond} events/s (${results.workers} worker threads; peak RSS ` +
        `${results.peakRssMb} MB) against ${results.readEventsPerSecond} read and parsed (${results.readPeakRssMb} MB): ` +
        `ratio ${results.ratio} (rounds ${results.roundRatios.join(', ')}), target ≥ 0.5; line by line ${results.lineByLineEventsPerSecond} events/s ` +
        `(${results.lineByLinePeakRssMb} MB); ${results.intact ? 'intact' : 'NOT INTACT'}`,
    );
    return results;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
};

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href && process.argv[2] === '--child') {
  await child(process.argv[3]!, process.argv[4] as Pass, process.argv[5]!);
}

/** Issue 29's target, and the history found intact by both verifiers. */
export const verifyHistoryChecks = (r: VerifyHistoryResults): Check[] => [
  check('history download verify ÷ read and parse (one thread)', r.ratio, '>=', 0.5),
  check('history download verify broken links (sanity)', r.intact ? 0 : 1, '=', 0),
];
