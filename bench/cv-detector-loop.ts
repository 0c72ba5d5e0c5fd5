import { readFileSync } from 'node:fs';
import { objectsCoco } from '../src/cv/models/objects-coco.js';
import { decodeQueue } from '../src/media/decode-queue.js';

/**
 * The `cv-detector` phase's baseline, a process of its own so that its CPU time and peak RSS are the loop's:
 * objects-coco's `run` on the given photographs in turn, `concurrency` runs at once, decodes through a
 * decode queue of one slot as the service's (MEDIA_DECODE_CONCURRENCY 1, which also sets sharp's threads).
 * Every thread is started and every photograph run once before the clock. Prints one `BENCH_RESULT <json>`.
 * Usage: node --import tsx bench/cv-detector-loop.ts <threads> <concurrency> <runs> <photo>...
 */
const [threadsArg, concurrencyArg, runsArg, ...files] = process.argv.slice(2);
const threads = Number(threadsArg);
const concurrency = Number(concurrencyArg);
const runs = Number(runsArg);
if (!(threads > 0 && concurrency > 0 && runs > 0) || files.length === 0)
  throw new Error('usage: cv-detector-loop.ts <threads> <concurrency> <runs> <photo>...');

const photos = files.map((file) => readFileSync(file));
const model = objectsCoco({ threads });
const decodes = decodeQueue({ concurrency: 1, maxWaiting: concurrency });
const signal = new AbortController().signal;
const run = (i: number) =>
  model.run(photos[i % photos.length]!, {
    signal,
    parameters: {},
    decode: <T>(work: () => Promise<T>) => decodes.job(work, signal),
  });

/** `count` runs, `concurrency` at a time, each loop taking the next photograph. */
const loops = async (count: number) => {
  let next = 0;
  const loop = async () => {
    for (let i = next++; i < count; i = next++) await run(i);
  };
  await Promise.all(Array.from({ length: concurrency }, loop));
};

try {
  await loops(Math.max(photos.length, threads) * 2);
  if (model.threads() !== threads) throw new Error(`${model.threads()} of ${threads} threads started`);
  const cpu = process.cpuUsage();
  const started = performance.now();
  await loops(runs);
  const seconds = (performance.now() - started) / 1000;
  const used = process.cpuUsage(cpu);
  const status = readFileSync('/proc/self/status', 'utf8');
  const kb = (field: string) => Number(new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? NaN);
  const result = {
    runs,
    seconds,
    runsPerSecond: runs / seconds,
    cpuMsPerImage: (used.user + used.system) / 1000 / runs,
    peakRssMb: kb('VmHWM') / 1024,
  };
  console.log(`BENCH_RESULT ${JSON.stringify(result)}`);
} finally {
  await model.close?.();
}
