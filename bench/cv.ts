import { setTimeout as sleep } from 'node:timers/promises';
import { builtinModels } from '../src/cv/models/registry.js';
import { testImage } from '../test/support/images.js';
import { json, startServer, tenantCaller } from './http.js';
import { removeTempDir, stopChild, type Child } from './processes.js';
import { benchService, provision } from './provision.js';
import { latencyFigures, type LatencyFigures } from './stats.js';

/**
 * The `cv` phase (issue 5): the built-in models on a 1024 × 768 JPEG (test/support/images.ts's testImage,
 * a few boxes on a gray background, lightly blurred), through the real service with its default
 * CV_CONCURRENCY. Reported, with no ratio target: there is no baseline a model run could be held to here.
 * - Jobs/s per model: `jobs` jobs submitted back to back, then followed until every one has finished;
 *   jobs/s = jobs ÷ (the last job's finishedAt − the first job's createdAt), both taken from the jobs'
 *   events (CvJobRequested and CvJobCompleted/Failed occurredAt).
 * - Time to start on an idle service: `samples` jobs submitted one at a time (each waits for the one before
 *   to finish), alternating the two models; CvJobStarted occurredAt − CvJobRequested occurredAt, i.e. the
 *   job's startedAt − createdAt. Those are whole milliseconds.
 * - The machinery's cost (issue 13): each model's `run` called `loopRuns` times in a plain loop in this
 *   process, one at a time (the service runs built-in models one at a time too: they hold a slot of the
 *   decode queue, MEDIA_DECODE_CONCURRENCY 1), on the same bytes, while the service is idle. `run` takes the
 *   stored bytes and decodes them itself, once, as it does inside a job. Target: service jobs/s ≥ 0.7 of it.
 */

export interface CvModelThroughput {
  model: string;
  jobs: number;
  completed: number;
  failed: number;
  seconds: number;
  jobsPerSecond: number;
  /** The mean of finishedAt − startedAt: one run of the model, queueing excluded. */
  meanRunMs: number;
}

/** A model's `run` in a plain loop: the baseline of its jobs/s. */
export interface CvModelLoop {
  model: string;
  runs: number;
  seconds: number;
  runsPerSecond: number;
}

export interface CvResults {
  image: { width: number; height: number; bytes: number };
  concurrency: number;
  throughput: CvModelThroughput[];
  loop: CvModelLoop[];
  /** Service jobs/s ÷ plain-loop runs/s, per model. */
  overhead: { model: string; ratio: number }[];
  startLatency: LatencyFigures & { samples: number };
}

interface Job {
  id: string;
  model: string;
  status: 'queued' | 'running' | 'completed' | 'failed';
  createdAt: string;
  startedAt: string | null;
  finishedAt: string | null;
}

const models = ['image-quality', 'object-proposals'] as const;
const concurrency = 4;

/** Each built-in model's `run` on the image, `runs` times one after another, after 3 unmeasured runs. */
const plainLoop = async (image: Buffer, runs: number): Promise<CvModelLoop[]> => {
  const loops: CvModelLoop[] = [];
  for (const name of models) {
    const model = builtinModels({ threads: 1 }).find((m) => m.name === name);
    if (!model) throw new Error(`no built-in model ${name}`);
    const run = {
      signal: new AbortController().signal,
      parameters: {},
      decode: <T>(work: () => Promise<T>) => work(),
    };
    for (let i = 0; i < 3; i += 1) await model.run(image, run);
    const started = performance.now();
    for (let i = 0; i < runs; i += 1) await model.run(image, run);
    const seconds = (performance.now() - started) / 1000;
    loops.push({ model: name, runs, seconds, runsPerSecond: runs / seconds });
  }
  return loops;
};

export const runCv = async ({
  jobs = 100,
  samples = 100,
  loopRuns = 100,
}: { jobs?: number; samples?: number; loopRuns?: number } = {}): Promise<CvResults> => {
  const { dataDir, adminKey, env } = benchService('cv');
  let service: { child: Child; base: string } | null = null;
  try {
    service = await startServer('src/main.ts', 'cv', {
      ...env,
      CV_CONCURRENCY: String(concurrency),
    });
    const principal = await provision(service.base, adminKey);
    const key = principal.tenantAdminKey;
    const tenant = `${service.base}/v1/tenants/${principal.tenantId}`;
    const call = tenantCaller(tenant, key);

    const width = 1024;
    const height = 768;
    const image = await testImage({
      width,
      height,
      format: 'jpeg',
      background: 150,
      boxes: [
        { x: 100, y: 80, width: 220, height: 160, value: 30 },
        { x: 520, y: 300, width: 300, height: 220, value: 60 },
        { x: 200, y: 500, width: 140, height: 140, value: 240 },
        { x: 760, y: 60, width: 120, height: 90, value: 20 },
      ],
      blur: 1,
    });
    const observation = await call('/observations', {
      method: 'POST',
      headers: json,
      body: JSON.stringify({ observedAt: '2025-05-01T19:42:00.000Z', notes: 'CV bench' }),
    });
    const observationId = observation.id as string;
    await call(`/observations/${observationId}/media`, {
      method: 'POST',
      headers: { 'content-type': 'application/octet-stream' },
      body: image,
    });
    const submit = async (model: string) =>
      (
        await call('/cv-jobs', {
          method: 'POST',
          headers: json,
          body: JSON.stringify({ observationId, model }),
        })
      ).id as string;
    /** Polls a job (folded from its stream, so never behind) until it has finished. */
    const finished = async (id: string, deadline: number): Promise<Job> => {
      for (;;) {
        const job = (await call(`/cv-jobs/${id}`)) as unknown as Job;
        if (job.status === 'completed' || job.status === 'failed') return job;
        if (Date.now() > deadline) throw new Error(`CV job ${id} still ${job.status}`);
        await sleep(10);
      }
    };

    // Time to start, on an idle service: one job at a time, after a few unmeasured ones.
    const startMs: number[] = [];
    for (let i = -4; i < samples; i += 1) {
      const job = await finished(await submit(models[(i + 4) % models.length]!), Date.now() + 60_000);
      if (i >= 0 && job.startedAt) startMs.push(Date.parse(job.startedAt) - Date.parse(job.createdAt));
    }

    const throughput: CvModelThroughput[] = [];
    for (const model of models) {
      const ids: string[] = [];
      for (let i = 0; i < jobs; i += 1) ids.push(await submit(model));
      const deadline = Date.now() + Math.max(120_000, jobs * 2000);
      const done: Job[] = [];
      for (const id of ids) done.push(await finished(id, deadline));
      const first = Math.min(...done.map((job) => Date.parse(job.createdAt)));
      const last = Math.max(...done.map((job) => Date.parse(job.finishedAt!)));
      const ran = done.filter((job) => job.startedAt !== null);
      const seconds = (last - first) / 1000;
      throughput.push({
        model,
        jobs,
        completed: done.filter((job) => job.status === 'completed').length,
        failed: done.filter((job) => job.status === 'failed').length,
        seconds,
        jobsPerSecond: jobs / seconds,
        meanRunMs:
          ran.reduce((sum, job) => sum + Date.parse(job.finishedAt!) - Date.parse(job.startedAt!), 0) /
          Math.max(1, ran.length),
      });
    }
    // The service is idle now: every job has finished.
    const loop = await plainLoop(image, loopRuns);
    return {
      image: { width, height, bytes: image.length },
      concurrency,
      throughput,
      loop,
      overhead: throughput.map((t) => ({
        model: t.model,
        ratio: t.jobsPerSecond / loop.find((l) => l.model === t.model)!.runsPerSecond,
      })),
      startLatency: { ...latencyFigures(startMs), samples: startMs.length },
    };
  } catch (error) {
    throw new Error(`${(error as Error).message}\nservice output:\n${service?.child.output() ?? ''}`, {
      cause: error,
    });
  } finally {
    if (service) await stopChild(service.child);
    removeTempDir(dataDir);
  }
};
