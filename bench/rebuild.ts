import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { observationsProjection } from '../projections/observations.js';
import { rebuild } from '../src/readmodels/rebuild.js';
import type { EventStore } from '../src/eventstore/port.js';
import { observationStream } from './events.js';
import { cpuProfileArgs, removeTempDir, startChild, tempDir, waitExit } from './processes.js';
import { openEventStoreAt, openReadModelsAt } from './targets.js';

/**
 * A blue/green rebuild of the observations read model over N seeded events, against a raw read of the same
 * events (the same filter and page size, doing nothing with them): the rebuild's events/s, its ratio to the
 * raw read's (the mean of one read just before and one just after the rebuild, so that a change in the
 * machine's load weighs on both), and its peak RSS. The rebuild runs in a child process of its own so that
 * the RSS is its own. Targets: ratio >= 0.5, peak RSS < 300 MB for 1M events. The events and read models
 * are SQLite files, or both one PostgreSQL database when the phase is given its URL.
 *
 *   npx tsx bench/rebuild.ts [events] [events per stream]      (defaults 200000 and 4)
 */

export interface RebuildResults {
  events: number;
  eventsPerStream: number;
  seedSeconds: number;
  rawReadEventsPerSecond: number;
  rebuildEventsPerSecond: number;
  rebuildSeconds: number;
  /** rebuild events/s divided by raw read events/s. */
  ratio: number;
  peakRssMb: number;
}

interface ChildResult {
  rawReadEventsPerSecond: number;
  rebuildEventsPerSecond: number;
  rebuildSeconds: number;
  events: number;
  peakRssMb: number;
}

const mb = (bytes: number) => bytes / 1024 / 1024;

/** The rebuild's page size (its default), so that both sides read the same pages. */
const pageSize = 1000;

/** Appends observation streams, 500 appends in flight: they share commits, so seeding 1M takes a minute. */
export const seedConcurrently = async (store: EventStore, total: number, perStream: number) => {
  const started = performance.now();
  let written = 0;
  for (let i = 0; written < total;) {
    const appends: Promise<unknown>[] = [];
    for (; appends.length < 500 && written < total; i += 1) {
      const { stream, events } = observationStream(i, Math.min(perStream, total - written));
      written += events.length;
      appends.push(store.appendToStream(stream, events, 'no_stream'));
    }
    await Promise.all(appends);
  }
  return { events: written, seconds: (performance.now() - started) / 1000 };
};

/** Everything the projection reads, page by page, doing nothing with it; returns events/s. */
const timedRawRead = async (store: EventStore, eventTypes: readonly string[]) => {
  const started = performance.now();
  let count = 0;
  for (let after = 0; ;) {
    const page = await store.readAll({ after, maxCount: pageSize, filter: { eventTypes } });
    count += page.events.length;
    after = page.lastPosition;
    if (page.isEnd) break;
  }
  return { count, eventsPerSecond: count / ((performance.now() - started) / 1000) };
};

/** The measured process: a raw read (once to warm the page cache, once timed), then the rebuild. */
const child = async (eventsTarget: string, readModelsTarget: string): Promise<ChildResult> => {
  let peakRss = process.memoryUsage().rss;
  const sampler = setInterval(() => (peakRss = Math.max(peakRss, process.memoryUsage().rss)), 100);
  const eventStore = await openEventStoreAt(eventsTarget);
  const readModels = await openReadModelsAt(readModelsTarget);
  try {
    const eventTypes = observationsProjection.eventTypes as readonly string[];
    await timedRawRead(eventStore, eventTypes); // warms the page cache, as a rebuild would find it
    const before = await timedRawRead(eventStore, eventTypes);
    const started = performance.now();
    const outcome = await rebuild(observationsProjection, { eventStore, readModels });
    const rebuildSeconds = (performance.now() - started) / 1000;
    const after = await timedRawRead(eventStore, eventTypes);
    const read = before.count;
    if (outcome.status !== 'swapped' || outcome.events !== read) {
      throw new Error(`rebuild ${outcome.status} after ${outcome.events} of ${read} events`);
    }
    return {
      events: read,
      rawReadEventsPerSecond: (before.eventsPerSecond + after.eventsPerSecond) / 2,
      rebuildEventsPerSecond: read / rebuildSeconds,
      rebuildSeconds,
      // The kernel's high-water mark catches peaks between samples too.
      peakRssMb: Math.max(mb(peakRss), process.resourceUsage().maxRSS / 1024),
    };
  } finally {
    clearInterval(sampler);
    await readModels.close();
    await eventStore.close();
  }
};

/**
 * `afterRebuild` runs on the same seeded events before they are removed (bench/audit.ts's verify). With
 * `databaseUrl`, events and read models are in that (empty) PostgreSQL database instead of SQLite files.
 */
export const rebuildBench = async (
  events: number,
  perStream = 4,
  afterRebuild?: (eventsTarget: string) => Promise<void>,
  databaseUrl?: string,
): Promise<RebuildResults> => {
  const dir = tempDir('rebuild');
  try {
    const eventsTarget = databaseUrl ?? join(dir, 'events.db');
    const store = await openEventStoreAt(eventsTarget);
    const seeded = await seedConcurrently(store, events, perStream).finally(() => store.close());
    const measured = startChild('bench/rebuild.ts', {
      args: ['--child', eventsTarget, databaseUrl ?? join(dir, 'readmodels.db')],
      nodeArgs: cpuProfileArgs(databaseUrl ? 'rebuild-postgres' : 'rebuild'),
    });
    const code = await waitExit(measured, 60 * 60_000);
    const line = /BENCH_RESULT (.*)/.exec(measured.output())?.[1];
    if (code !== 0 || !line) throw new Error(`rebuild child failed (${code}):\n${measured.output()}`);
    const result = JSON.parse(line) as ChildResult;
    await afterRebuild?.(eventsTarget);
    return {
      events: result.events,
      eventsPerStream: perStream,
      seedSeconds: seeded.seconds,
      rawReadEventsPerSecond: result.rawReadEventsPerSecond,
      rebuildEventsPerSecond: result.rebuildEventsPerSecond,
      rebuildSeconds: result.rebuildSeconds,
      ratio: result.rebuildEventsPerSecond / result.rawReadEventsPerSecond,
      peakRssMb: result.peakRssMb,
    };
  } finally {
    removeTempDir(dir);
  }
};

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const [first, ...rest] = process.argv.slice(2);
  if (first === '--child') {
    const [eventsTarget, readModelsTarget] = rest;
    if (!eventsTarget || !readModelsTarget)
      throw new Error('usage: rebuild.ts --child <events.db | postgres url> <readmodels.db | postgres url>');
    console.log(`BENCH_RESULT ${JSON.stringify(await child(eventsTarget, readModelsTarget))}`);
  } else {
    const results = await rebuildBench(Number(first ?? 200_000), Number(rest[0] ?? 4));
    console.log(JSON.stringify(results, null, 2));
  }
}
