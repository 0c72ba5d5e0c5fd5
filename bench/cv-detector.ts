import { randomBytes } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { basename, join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { darknetPhotos } from '../test/support/photos.js';
import { json, observationBody, startServer, tenantCaller, waitProjected } from './http.js';
import { projectRoot, removeTempDir, startChild, stopChild, waitExit, type Child } from './processes.js';
import { benchService, provision } from './provision.js';
import { latencyFigures, type LatencyFigures } from './stats.js';

/**
 * The `cv-detector` phase (issue 24, "Throughput"): the built-in detector objects-coco through the whole job
 * (POST /cv-jobs → claim → events → blob read → inference → CvJobCompleted → the cv.job.completed webhook
 * at a receiver on 127.0.0.1) against the same model in a plain loop (bench/cv-detector-loop.ts), on real
 * photographs in turn, with the same threads (CV_WORKERS) and concurrency (CV_CONCURRENCY), once before
 * the service and once after it. Both sides start every thread and run every photograph before the clock. The service runs two bursts of `jobs`
 * jobs submitted back to back: the first alone (jobs/s and CPU per image, from the service's
 * /proc/<pid>/stat), the second while another client lists observations every `probeMs` (that list's
 * latency, against the same list on the idle service). The event-loop delay is prom-client's
 * monitorEventLoopDelay histogram (resolution 10 ms), read from GET /metrics, which resets it, right before
 * and right after each burst. docs/benchmarks.md#the-detector says more.
 */

export interface DetectorSide {
  jobs: number;
  seconds: number;
  jobsPerSecond: number;
  cpuMsPerImage: number;
  peakRssMb: number;
}

/** nodejs_eventloop_lag_*_seconds over a burst, in ms: the time between two 10 ms timer ticks. */
export interface LoopDelay {
  p50Ms: number;
  p99Ms: number;
  maxMs: number;
}

export interface DetectorResults {
  photos: string[];
  threads: number;
  concurrency: number;
  service: DetectorSide & { failed: number; loopDelay: LoopDelay };
  /** The mean of two loops, one before the service and one after it; each in `runs`. */
  loop: DetectorSide & { runs: { jobsPerSecond: number; cpuMsPerImage: number }[] };
  /** Service ÷ loop: jobs/s (target ≥ 0.85) and CPU per image (target ≤ 1.15). */
  jobsPerSecondRatio: number;
  cpuPerImageRatio: number;
  list: {
    probeMs: number;
    idle: LatencyFigures & { count: number };
    duringJobs: LatencyFigures & { count: number; loopDelay: LoopDelay; seconds: number };
    p99Ratio: number;
  };
}

const clockTicks = 100; // USER_HZ: /proc/<pid>/stat counts CPU time in 1/100 s on Linux

/** User + system CPU time of a process, all its threads, in ms. */
const cpuMs = (pid: number): number => {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return ((Number(fields[11]) + Number(fields[12])) * 1000) / clockTicks;
};

const peakRssMb = (pid: number): number =>
  Number(/VmHWM:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1]) / 1024;

/** The fixtures, then darknet's dog, horses and person when DARKNET_DATA (or a copy of them) is there. */
const photoFiles = (): string[] => {
  const fixtures = ['astronaut', 'chelsea', 'coffee'].map((name) =>
    join(projectRoot, 'test', 'fixtures', 'photos', `${name}.jpg`),
  );
  const darknet = darknetPhotos();
  return darknet
    ? [...fixtures, ...['dog', 'horses', 'person'].map((n) => join(darknet, `${n}.jpg`))]
    : fixtures;
};

const baseline = async (threads: number, concurrency: number, runs: number, files: string[]) => {
  const child = startChild('bench/cv-detector-loop.ts', {
    args: [String(threads), String(concurrency), String(runs), ...files],
  });
  const code = await waitExit(child, 10 * 60_000);
  const line = /BENCH_RESULT (.*)/.exec(child.output())?.[1];
  if (code !== 0 || !line) throw new Error(`the detector loop failed (${code}):\n${child.output()}`);
  const r = JSON.parse(line) as { runs: number; seconds: number; runsPerSecond: number } & DetectorSide;
  return { ...r, jobs: r.runs, jobsPerSecond: r.runsPerSecond };
};

const loopDelayOf = (metrics: string): LoopDelay => {
  const ms = (name: string) =>
    Number(new RegExp(`^nodejs_eventloop_lag_${name}_seconds (\\S+)`, 'm').exec(metrics)?.[1]) * 1000;
  return { p50Ms: ms('p50'), p99Ms: ms('p99'), maxMs: ms('max') };
};

/** A `done` for `probe`: true once `ms` have passed. */
const after = (ms: number) => {
  const end = Date.now() + ms;
  return () => Date.now() >= end;
};

/** GET `url` one request at a time, `probeMs` apart, until `done()`; the latency of each. */
const probe = async (url: string, headers: Record<string, string>, probeMs: number, done: () => boolean) => {
  const ms: number[] = [];
  while (!done()) {
    const started = performance.now();
    const response = await fetch(url, { headers });
    await response.arrayBuffer();
    if (response.status !== 200) throw new Error(`GET ${url} answered ${response.status}`);
    ms.push(performance.now() - started);
    await sleep(probeMs);
  }
  return ms;
};

export const runCvDetector = async ({
  jobs = 100,
  threads = Math.max(1, availableParallelism() - 1),
  concurrency = 4,
  probeMs = 20,
}: {
  jobs?: number;
  threads?: number;
  concurrency?: number;
  probeMs?: number;
} = {}): Promise<DetectorResults> => {
  const files = photoFiles();
  const loopBefore = await baseline(threads, concurrency, jobs, files);

  const { dataDir, adminKey, env } = benchService('cv-detector');
  const children: Child[] = [];
  let service: { child: Child; base: string } | null = null;
  try {
    const receiver = await startServer('bench/webhook-receiver.ts', 'cv-detector-receiver', {});
    children.push(receiver.child);
    service = await startServer('src/main.ts', 'cv-detector', {
      ...env,
      CV_WORKERS: String(threads),
      CV_CONCURRENCY: String(concurrency),
      WEBHOOK_ALLOW_HTTP: 'true',
      WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true',
    });
    children.push(service.child);
    const pid = service.child.process.pid!;
    const principal = await provision(service.base, adminKey);
    const key = principal.tenantAdminKey;
    const tenant = `${service.base}/v1/tenants/${principal.tenantId}`;
    const call = tenantCaller(tenant, key);
    await call('/webhooks', {
      method: 'POST',
      headers: json,
      body: JSON.stringify({
        url: `${receiver.base}/hook`,
        events: ['cv.job.completed', 'cv.job.failed'],
        secret: randomBytes(24).toString('hex'),
      }),
    });
    // A page of 50 to list, then one observation per photograph.
    for (let i = 0; i < 200; i += 1)
      await call('/observations', { method: 'POST', headers: json, body: observationBody });
    const observations: string[] = [];
    for (const file of files) {
      const { id } = await call('/observations', { method: 'POST', headers: json, body: observationBody });
      await call(`/observations/${id as string}/media`, {
        method: 'POST',
        headers: { 'content-type': 'application/octet-stream' },
        body: readFileSync(file),
      });
      observations.push(id as string);
    }
    const listUrl = `${tenant}/observations?limit=50`;
    await waitProjected(`${tenant}/observations`, principal.headers);

    const deliveries = async () =>
      (await (await fetch(`${receiver.base}/arrivals`)).json()) as { at: number; body: string }[];
    const metrics = async () =>
      (await fetch(`${service!.base}/metrics`, { headers: { 'x-api-key': adminKey } })).text();
    /** Submits `count` jobs back to back and waits for their webhooks; the receiver starts empty. */
    const burst = async (count: number) => {
      await fetch(`${receiver.base}/reset`, { method: 'POST' });
      const started = performance.timeOrigin + performance.now();
      for (let i = 0; i < count; i += 1)
        await call('/cv-jobs', {
          method: 'POST',
          headers: json,
          body: JSON.stringify({
            observationId: observations[i % observations.length],
            model: 'objects-coco',
          }),
        });
      const deadline = Date.now() + Math.max(120_000, count * 5000);
      for (;;) {
        const arrived = Number(await (await fetch(`${receiver.base}/count`)).text());
        if (arrived >= count) break;
        if (Date.now() > deadline) throw new Error(`${arrived} of ${count} CV webhooks arrived`);
        await sleep(20);
      }
      const arrivals = await deliveries();
      const last = Math.max(...arrivals.map((a) => a.at));
      const failed = arrivals.filter(
        (a) => (JSON.parse(a.body) as { type: string }).type !== 'cv.job.completed',
      );
      return { seconds: (last - started) / 1000, failed: failed.length };
    };

    // Warm-up, unmeasured: every thread started, every photograph decoded and run, the list's caches.
    await burst(Math.max(files.length, threads) * 2);
    await probe(listUrl, principal.headers, probeMs, after(3000));
    const idle = await probe(listUrl, principal.headers, probeMs, after(10_000));

    await metrics();
    const cpuBefore = cpuMs(pid);
    const alone = await burst(jobs);
    const cpu = cpuMs(pid) - cpuBefore;
    const aloneDelay = loopDelayOf(await metrics());

    let burstDone = false;
    const during = probe(listUrl, principal.headers, probeMs, () => burstDone);
    const loaded = await burst(jobs);
    burstDone = true;
    const duringMs = await during;
    const loadedDelay = loopDelayOf(await metrics());
    const servicePeakRssMb = peakRssMb(pid);

    await stopChild(service.child);
    // Once more after the service, since other work on the machine comes and goes: the mean is the baseline.
    const loopAfter = await baseline(threads, concurrency, jobs, files);
    const loop = {
      jobs,
      seconds: (loopBefore.seconds + loopAfter.seconds) / 2,
      jobsPerSecond: (loopBefore.jobsPerSecond + loopAfter.jobsPerSecond) / 2,
      cpuMsPerImage: (loopBefore.cpuMsPerImage + loopAfter.cpuMsPerImage) / 2,
      peakRssMb: Math.max(loopBefore.peakRssMb, loopAfter.peakRssMb),
      runs: [loopBefore, loopAfter].map(({ jobsPerSecond, cpuMsPerImage }) => ({
        jobsPerSecond,
        cpuMsPerImage,
      })),
    };
    const measured = {
      jobs,
      seconds: alone.seconds,
      jobsPerSecond: jobs / alone.seconds,
      cpuMsPerImage: cpu / jobs,
      peakRssMb: servicePeakRssMb,
      failed: alone.failed + loaded.failed,
      loopDelay: aloneDelay,
    };
    const idleFigures = { ...latencyFigures(idle), count: idle.length };
    const duringFigures = { ...latencyFigures(duringMs), count: duringMs.length };
    return {
      photos: files.map((file) => basename(file)),
      threads,
      concurrency,
      service: measured,
      loop,
      jobsPerSecondRatio: measured.jobsPerSecond / loop.jobsPerSecond,
      cpuPerImageRatio: measured.cpuMsPerImage / loop.cpuMsPerImage,
      list: {
        probeMs,
        idle: idleFigures,
        duringJobs: { ...duringFigures, loopDelay: loadedDelay, seconds: loaded.seconds },
        p99Ratio: duringFigures.p99Ms / idleFigures.p99Ms,
      },
    };
  } catch (error) {
    throw new Error(`${(error as Error).message}\nservice output:\n${service?.child.output() ?? ''}`, {
      cause: error,
    });
  } finally {
    for (const child of children.reverse()) await stopChild(child);
    removeTempDir(dataDir);
  }
};

const f = (value: number, digits = 2) => value.toFixed(digits);

/** Prints the figures against their targets and, unless BENCH_WRITE=0, keeps them in docs/bench/cv-detector.json. */
export const reportCvDetector = (r: DetectorResults): string[] => {
  const { service: s, loop: l, list } = r;
  const delay = (d: LoopDelay) => `p50 ${f(d.p50Ms, 1)} / p99 ${f(d.p99Ms, 1)} / max ${f(d.maxMs, 1)} ms`;
  console.log(
    [
      `cv-detector: ${r.photos.length} photographs (${r.photos.join(', ')}), CV_WORKERS ${r.threads}, CV_CONCURRENCY ${r.concurrency}`,
      `cv-detector: service ${f(s.jobsPerSecond)} jobs/s, ${f(s.cpuMsPerImage, 0)} ms CPU/image (${s.jobs} jobs, ${f(s.seconds, 1)} s, ${s.failed} failed); loop ${f(l.jobsPerSecond)} runs/s, ${f(l.cpuMsPerImage, 0)} ms CPU/image (before/after the service: ${l.runs.map((run) => `${f(run.jobsPerSecond)} runs/s ${f(run.cpuMsPerImage, 0)} ms`).join(', ')})`,
      `cv-detector: jobs/s ÷ loop ${f(r.jobsPerSecondRatio)} (target >= 0.85: ${r.jobsPerSecondRatio >= 0.85 ? 'pass' : 'MISS'}); CPU/image ÷ loop ${f(r.cpuPerImageRatio)} (target <= 1.15: ${r.cpuPerImageRatio <= 1.15 ? 'pass' : 'MISS'})`,
      `cv-detector: event-loop tick (10 ms timer) during jobs ${delay(s.loopDelay)}; during jobs and lists ${delay(list.duringJobs.loopDelay)}`,
      `cv-detector: list p50/p99/max ${f(list.idle.p50Ms, 1)}/${f(list.idle.p99Ms, 1)}/${f(list.idle.maxMs, 1)} ms idle (${list.idle.count}), ${f(list.duringJobs.p50Ms, 1)}/${f(list.duringJobs.p99Ms, 1)}/${f(list.duringJobs.maxMs, 1)} ms during jobs (${list.duringJobs.count}); p99 ratio ${f(list.p99Ratio)}`,
      `cv-detector: peak RSS service ${f(s.peakRssMb, 0)} MiB, loop ${f(l.peakRssMb, 0)} MiB`,
    ].join('\n'),
  );
  if (process.env.BENCH_WRITE === '0') return [];
  const file = join(projectRoot, 'docs', 'bench', 'cv-detector.json');
  writeFileSync(file, `${JSON.stringify(r, null, 2)}\n`);
  return [file];
};
