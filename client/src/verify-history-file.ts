import { readFileSync } from 'node:fs';
import { open, stat } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { availableParallelism } from 'node:os';
import { dirname, join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { Worker } from 'node:worker_threads';
import { linesOf, transferred, type ChunkVerdict, type Transferred } from './verify-history-chunk.js';
import type { LinksAnswer, WorkerRequest } from './verify-history-worker.js';
import {
  digestLeaves,
  emptyReport,
  HistoryFormatError,
  signatureProblemOf,
  verifyHistory,
  type HistoryReport,
  type VerifyHistoryOptions,
} from './verify-history.js';

/**
 * The file in chunks of about `size` bytes, each ending at a line's end (the last one, at the file's),
 * each in a buffer of its own so that it can be handed to another thread. A line longer than `size` makes
 * its chunk as long as it needs.
 */
export async function* wholeLineChunks(path: string, size = 1 << 20): AsyncGenerator<Buffer> {
  const handle = await open(path);
  try {
    let carried = Buffer.alloc(0);
    for (;;) {
      const buffer = Buffer.allocUnsafeSlow(Math.max(size, carried.length * 2));
      carried.copy(buffer);
      const { bytesRead } = await handle.read(buffer, carried.length, buffer.length - carried.length, null);
      const filled = carried.length + bytesRead;
      if (bytesRead === 0) {
        if (filled > 0) yield buffer.subarray(0, filled);
        return;
      }
      const end = buffer.lastIndexOf(10, filled - 1) + 1;
      carried = Buffer.from(buffer.subarray(end, filled));
      if (end > 0) yield buffer.subarray(0, end);
    }
  } finally {
    await handle.close();
  }
}

/** The lines of a downloaded history file, read as they are needed: the file is never held whole. */
export async function* historyFileLines(path: string): AsyncGenerator<string> {
  for await (const chunk of wholeLineChunks(path)) yield* linesOf(chunk);
}

/** How verifyHistoryFile spreads its work: worker threads, and the smallest file worth starting them for. */
export interface FileVerifyTuning {
  workers: number;
  minParallelBytes: number;
  chunkBytes: number;
}

export const defaultTuning = (): FileVerifyTuning => ({
  workers: Math.min(availableParallelism(), 8),
  minParallelBytes: 16 << 20,
  chunkBytes: 1 << 20,
});

/**
 * tsx's ESM API, found from here as `import` would find it: `require.resolve` gives its CommonJS build, whose
 * `register` does not work from a worker's first script.
 */
const tsxApiUrl = (): string => {
  const manifest = createRequire(import.meta.url).resolve('tsx/package.json');
  const { exports } = JSON.parse(readFileSync(manifest, 'utf8')) as {
    exports: Record<string, { import: { default: string } }>;
  };
  return pathToFileURL(join(dirname(manifest), exports['./esm/api']!.import.default)).href;
};

/**
 * A worker thread running verify-history-worker. In a checkout the sources run as TypeScript under tsx,
 * whose loader a worker thread does not inherit (Node 20), so there the worker registers it first.
 */
const startWorker = (): Worker => {
  const typescript = import.meta.url.endsWith('.ts');
  const source = new URL(`./verify-history-worker.${typescript ? 'ts' : 'js'}`, import.meta.url);
  if (!typescript) return new Worker(source);
  const [api, worker] = [tsxApiUrl(), source.href].map((url) => JSON.stringify(url));
  return new Worker(`import(${api}).then(({ register }) => { register(); return import(${worker}); })`, {
    eval: true,
  });
};

/** The workers, each answering requests by id; worker `w` keeps the heads of shard `w`. */
const workerPool = (count: number) => {
  const answers = new Map<number, { resolve: (answer: never) => void; reject: (error: unknown) => void }>();
  const workers = Array.from({ length: count }, () => {
    const worker = startWorker();
    worker.on('message', ({ id, answer }: { id: number; answer: never }) => {
      answers.get(id)?.resolve(answer);
      answers.delete(id);
    });
    worker.on('error', (error) => {
      for (const { reject } of answers.values()) reject(error);
      answers.clear();
    });
    return { worker, chunks: 0 };
  });
  let lastId = 0;
  const ask = <T>(worker: Worker, request: WorkerRequest, transfer: ArrayBuffer[]): Promise<T> =>
    new Promise<T>((resolve, reject) => {
      answers.set(request.id, { resolve: resolve, reject });
      worker.postMessage(request, transfer);
    });
  return {
    /** Verifies a chunk in the worker with the fewest chunks in hand. */
    verify: async (bytes: Buffer, withHashes: boolean): Promise<ChunkVerdict> => {
      const least = workers.reduce((least, next) => (next.chunks < least.chunks ? next : least));
      least.chunks += 1;
      const chunk = transferred(bytes);
      const request: WorkerRequest = { id: ++lastId, kind: 'chunk', chunk, withHashes, shards: count };
      try {
        return await ask<ChunkVerdict>(least.worker, request, [chunk.buffer]);
      } finally {
        least.chunks -= 1;
      }
    },
    /** Links one shard's streams across a chunk's start, in its keeper. */
    link: (shard: number, links: Transferred): Promise<LinksAnswer> =>
      ask<LinksAnswer>(workers[shard]!.worker, { id: ++lastId, kind: 'links', links }, [links.buffer]),
    stop: () => Promise.all(workers.map(({ worker }) => worker.terminate())),
  };
};

/**
 * What the reading thread joins of the chunks' verdicts, in file order: the positions across their starts,
 * the counts, and the log tree's leaves; null from `join` at the first thing that does not hold.
 */
const chunkJoin = ({ digest }: VerifyHistoryOptions) => {
  const leaves = digestLeaves(digest);
  const report = emptyReport();
  const join = (chunk: ChunkVerdict): boolean => {
    const last = report.range.toPosition;
    if (!chunk.intact || (last !== null && chunk.firstPosition !== null && chunk.firstPosition <= last))
      return false;
    report.events += chunk.events;
    report.uncommitted += chunk.uncommitted;
    report.range.fromPosition ??= chunk.firstPosition;
    report.range.toPosition = chunk.lastPosition ?? last;
    for (let at = 0; at < chunk.hashes.length; at += 64)
      if (!leaves.add(chunk.hashes.slice(at, at + 64))) return false;
    return true;
  };
  const result = (streams: number): HistoryReport => leaves.outcome({ ...report, streams });
  return { join, result };
};

/**
 * verifyHistory over the chunks of a file in worker threads; null when something does not hold, to be named
 * by the line-by-line pass (a broken history costs a second read; an intact one, one).
 */
export const verifyInParallel = async (
  path: string,
  options: VerifyHistoryOptions,
  { workers, chunkBytes }: FileVerifyTuning,
): Promise<HistoryReport | null> => {
  if (options.digest && signatureProblemOf(options.digest, options.jwks) !== null) return null;
  const pool = workerPool(workers);
  const { join, result } = chunkJoin(options);
  const withHashes = options.digest !== undefined;
  // Four chunks in hand per worker at most, so that none waits for the next while one lags: memory stays
  // a few chunks whatever the file's size.
  const verdicts: Promise<ChunkVerdict>[] = [];
  const linked: Promise<LinksAnswer>[] = [];
  let streams = 0;
  let unlinked = false;
  const joinNext = async (): Promise<boolean> => {
    const verdict = await verdicts.shift()!;
    if (unlinked || !join(verdict)) return false;
    verdict.links.forEach((links, shard) => {
      const answer = pool.link(shard, links);
      linked.push(answer);
      void answer.then(
        ({ intact, newStreams }) => {
          unlinked ||= !intact;
          streams += newStreams;
        },
        () => undefined,
      );
    });
    return true;
  };
  try {
    for await (const chunk of wholeLineChunks(path, chunkBytes)) {
      verdicts.push(pool.verify(chunk, withHashes));
      if (verdicts.length > 4 * workers && !(await joinNext())) return null;
    }
    while (verdicts.length > 0) if (!(await joinNext())) return null;
    for (const answer of await Promise.all(linked)) if (!answer.intact) return null;
    return result(streams);
  } finally {
    // Answers still on their way are not waited for: their workers are stopped.
    for (const answer of [...verdicts, ...linked]) answer.catch(() => undefined);
    await pool.stop();
  }
};

/**
 * verifyHistory over a downloaded file, with the report it would give: a large file's chunks verified side
 * by side in worker threads, a small one (or a broken one, to name what broke) line by line.
 */
export const verifyHistoryFile = async (
  path: string,
  options: VerifyHistoryOptions = {},
  tuning: Partial<FileVerifyTuning> = {},
): Promise<HistoryReport> => {
  const settings = { ...defaultTuning(), ...tuning };
  const parallel = settings.workers > 1 && (await stat(path)).size >= settings.minParallelBytes;
  return (
    (parallel ? await verifyInParallel(path, options, settings) : null) ??
    verifyHistory(historyFileLines(path), options)
  );
};

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
