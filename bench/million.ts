import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { openSqliteEventStore } from '../src/eventstore/sqlite.js';
import { cpuProfileArgs, startChild, removeTempDir, tempDir, waitExit } from './processes.js';
import { seed } from './store.js';

/** Phase 4: seed a large store here, then catch a projection up over it in a child process of its own. */

export interface MillionResults {
  events: number;
  eventsPerStream: number;
  seedSeconds: number;
  seedEventsPerSecond: number;
  catchUpSeconds: number;
  catchUpEventsPerSecond: number;
  /** The larger of the in-process samples, the kernel's high-water mark and the parent's /proc samples. */
  peakRssMb: number;
  peakRssSampledMb: number;
  maxRssMb: number;
  parentSampledRssMb: number | null;
  startRssMb: number;
  peakHeapUsedMb: number;
  /** Times the in-process 100 ms sampler fired during the catch-up. */
  samples: number;
}

interface ChildResult {
  events: number;
  seconds: number;
  eventsPerSecond: number;
  startRssMb: number;
  peakRssSampledMb: number;
  maxRssMb: number;
  peakHeapUsedMb: number;
  samples: number;
}

/** VmRSS of another process from /proc (Linux), in MB; null where /proc is not available. */
const rssOf = (pid: number): number | null => {
  try {
    const match = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return match ? Number(match[1]) / 1024 : null;
  } catch {
    return null;
  }
};

export const millionCatchUp = async (events: number, perStream: number): Promise<MillionResults> => {
  const dir = tempDir('million');
  try {
    const eventsFile = join(dir, 'events.db');
    const store = openSqliteEventStore(eventsFile);
    const seeded = await seed(store, events, perStream).finally(() => store.close());

    const child = startChild('bench/catch-up-child.ts', {
      args: [eventsFile, join(dir, 'readmodels.db')],
      nodeArgs: cpuProfileArgs('catch-up'),
    });
    let parentPeak: number | null = null;
    const sampler = setInterval(() => {
      const rss = child.process.pid === undefined ? null : rssOf(child.process.pid);
      if (rss !== null) parentPeak = Math.max(parentPeak ?? 0, rss);
    }, 100);
    const code = await waitExit(child, 60 * 60_000).finally(() => clearInterval(sampler));
    const line = child
      .output()
      .split('\n')
      .find((l) => l.startsWith('BENCH_RESULT '));
    if (code !== 0 || !line) throw new Error(`catch-up child exited with ${code}:\n${child.output()}`);
    const result = JSON.parse(line.slice('BENCH_RESULT '.length)) as ChildResult;
    return {
      events: seeded.events,
      eventsPerStream: perStream,
      seedSeconds: seeded.seconds,
      seedEventsPerSecond: seeded.events / seeded.seconds,
      catchUpSeconds: result.seconds,
      catchUpEventsPerSecond: result.eventsPerSecond,
      peakRssMb: Math.max(result.peakRssSampledMb, result.maxRssMb, parentPeak ?? 0),
      peakRssSampledMb: result.peakRssSampledMb,
      maxRssMb: result.maxRssMb,
      parentSampledRssMb: parentPeak,
      startRssMb: result.startRssMb,
      peakHeapUsedMb: result.peakHeapUsedMb,
      samples: result.samples,
    };
  } finally {
    removeTempDir(dir);
  }
};
