import { join } from 'node:path';
import { pino } from 'pino';
import { observationsProjection } from '../projections/observations.js';
import { observationEventTypes } from '../src/observations/observation.js';
import type { NewEvent } from '../src/core/events.js';
import type { EventStore } from '../src/eventstore/port.js';
import { openSqliteEventStore } from '../src/eventstore/sqlite.js';
import { projectionRunner } from '../src/readmodels/runner.js';
import { observationStream } from './events.js';
import { removeTempDir, tempDir } from './processes.js';
import { openReadModelsAt } from './targets.js';

/** Phases 2 and 3, in process: append throughput and projection catch-up against the embedded stores. */

const seconds = (since: number) => (performance.now() - since) / 1000;

export interface AppendResults {
  events: number;
  unbatchedEventsPerSecond: number;
  batchSize: number;
  batchedEventsPerSecond: number;
}

const appendAll = async (
  store: EventStore,
  streams: { stream: string; events: NewEvent[] }[],
): Promise<number> => {
  const started = performance.now();
  for (const { stream, events } of streams) await store.appendToStream(stream, events, 'no_stream');
  return seconds(started);
};

/** Events are generated before the clock starts, so only the store is timed. Each mode gets a fresh file. */
export const appendThroughput = async (events: number, batchSize = 100): Promise<AppendResults> => {
  const dir = tempDir('append');
  try {
    const run = async (file: string, perStream: number) => {
      const streams = Array.from({ length: Math.ceil(events / perStream) }, (_, i) =>
        observationStream(i, perStream),
      );
      const store = openSqliteEventStore(join(dir, file));
      try {
        return events / (await appendAll(store, streams));
      } finally {
        await store.close();
      }
    };
    const unbatchedEventsPerSecond = await run('unbatched.db', 1);
    const batchedEventsPerSecond = await run('batched.db', batchSize);
    return { events, unbatchedEventsPerSecond, batchSize, batchedEventsPerSecond };
  } finally {
    removeTempDir(dir);
  }
};

/**
 * Appends `total` events as observation streams of `perStream` events each (one append per stream),
 * generating each stream just before its append so that memory stays flat.
 */
export const seed = async (
  store: EventStore,
  total: number,
  perStream: number,
): Promise<{ events: number; seconds: number }> => {
  const started = performance.now();
  let written = 0;
  for (let i = 0; written < total; i += 1) {
    const { stream, events } = observationStream(i, Math.min(perStream, total - written));
    await store.appendToStream(stream, events, 'no_stream');
    written += events.length;
  }
  return { events: written, seconds: seconds(started) };
};

/** Reads everything after 0 in pages, as a subscription would, without doing anything with the events. */
export const rawRead = async (
  store: EventStore,
  filter?: { eventTypes: readonly string[] },
): Promise<number> => {
  let after = 0;
  let count = 0;
  for (;;) {
    const page = await store.readAll({ after, maxCount: 500, ...(filter ? { filter } : {}) });
    count += page.events.length;
    after = page.lastPosition;
    if (page.isEnd) return count;
  }
};

export interface ProjectionRun {
  events: number;
  seconds: number;
  eventsPerSecond: number;
}

/**
 * The real projection runner from position 0 to `head`, against fresh read models: a new SQLite file, or
 * a PostgreSQL database that holds none yet (bench/targets.ts).
 */
export const projectFromStart = async (
  store: EventStore,
  readModelsTarget: string,
  head: number,
): Promise<ProjectionRun> => {
  const readModels = await openReadModelsAt(readModelsTarget);
  const runner = projectionRunner(observationsProjection, {
    eventStore: store,
    readModels,
    logger: pino({ level: 'warn' }),
  });
  try {
    const started = performance.now();
    await runner.start();
    if (!(await runner.waitFor(head, 30 * 60_000)))
      throw new Error(`projection did not reach ${head}: ${JSON.stringify(runner.status())}`);
    const elapsed = seconds(started);
    return { events: head, seconds: elapsed, eventsPerSecond: head / elapsed };
  } finally {
    await runner.stop();
    await readModels.close();
  }
};

export interface CatchUpResults {
  events: number;
  eventsPerStream: number;
  seedSeconds: number;
  rawReadEventsPerSecond: number;
  rawReadFilteredEventsPerSecond: number;
  projectionEventsPerSecond: number;
  projectionSeconds: number;
}

/**
 * The figures of the catch-up phase over a seeded store: a raw readAll in pages of 500 (once unmeasured, to
 * warm the caches as the projection run finds them, then timed), the same with the projection's type
 * filter, then the projection runner from the start into fresh read models at `readModelsTarget`.
 */
export const catchUpFigures = async (
  store: EventStore,
  seeded: { events: number; seconds: number },
  perStream: number,
  readModelsTarget: string,
): Promise<CatchUpResults> => {
  const head = await store.headPosition();
  const timedRead = async (filter?: { eventTypes: readonly string[] }) => {
    const started = performance.now();
    const count = await rawRead(store, filter);
    if (count !== seeded.events) throw new Error(`raw read saw ${count} of ${seeded.events} events`);
    return count / seconds(started);
  };
  await timedRead(); // warms the page cache, as the projection run below would find it
  const rawReadEventsPerSecond = await timedRead();
  const rawReadFilteredEventsPerSecond = await timedRead({ eventTypes: observationEventTypes });
  const projection = await projectFromStart(store, readModelsTarget, head);
  return {
    events: seeded.events,
    eventsPerStream: perStream,
    seedSeconds: seeded.seconds,
    rawReadEventsPerSecond,
    rawReadFilteredEventsPerSecond,
    projectionEventsPerSecond: projection.eventsPerSecond,
    projectionSeconds: projection.seconds,
  };
};

export const catchUpSpeed = async (events: number, perStream: number): Promise<CatchUpResults> => {
  const dir = tempDir('catch-up');
  const store = openSqliteEventStore(join(dir, 'events.db'));
  try {
    const seeded = await seed(store, events, perStream);
    return await catchUpFigures(store, seeded, perStream, join(dir, 'readmodels.db'));
  } finally {
    await store.close();
    removeTempDir(dir);
  }
};
