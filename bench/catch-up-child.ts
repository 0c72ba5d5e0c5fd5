import { openSqliteEventStore } from '../src/eventstore/sqlite.js';
import { projectFromStart } from './store.js';

/**
 * Phase 4's measured process: only the projection catch-up over an already seeded event store, so that the
 * RSS seen here is the catch-up's own. Prints one `BENCH_RESULT <json>` line.
 * Usage: node --import tsx bench/catch-up-child.ts <events.db> <readmodels.db>
 */
const [eventsFile, readModelsFile] = process.argv.slice(2);
if (!eventsFile || !readModelsFile) throw new Error('usage: catch-up-child.ts <events.db> <readmodels.db>');

const mb = (bytes: number) => bytes / 1024 / 1024;

let peakRss = process.memoryUsage().rss;
let peakHeapUsed = 0;
/** How often the interval fired: the catch-up only lets timers run between batches that really wait. */
let samples = 0;
const sample = () => {
  const usage = process.memoryUsage();
  peakRss = Math.max(peakRss, usage.rss);
  peakHeapUsed = Math.max(peakHeapUsed, usage.heapUsed);
};
const sampler = setInterval(() => {
  sample();
  samples += 1;
}, 100);

const store = openSqliteEventStore(eventsFile);
try {
  const head = await store.headPosition();
  const startRss = process.memoryUsage().rss;
  const run = await projectFromStart(store, readModelsFile, head);
  sample();
  const result = {
    ...run,
    startRssMb: mb(startRss),
    peakRssSampledMb: mb(peakRss),
    // The kernel's high-water mark for the whole process: catches peaks between samples too.
    maxRssMb: process.resourceUsage().maxRSS / 1024,
    peakHeapUsedMb: mb(peakHeapUsed),
    samples,
  };
  console.log(`BENCH_RESULT ${JSON.stringify(result)}`);
} finally {
  clearInterval(sampler);
  await store.close();
}
