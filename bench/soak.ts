import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import sharp from 'sharp';
import { Agent, request } from 'undici';
import { freePort, projectRoot, removeTempDir, waitHealthy, type Child } from './processes.js';
import { benchService } from './provision.js';
import { check, type Check } from './report.js';
import { percentile } from './stats.js';

/**
 * The `soak` phase (issue 10): the real service under a steady mixed load for `durationS` (BENCH_SOAK_S,
 * 600 by default), watching its memory and latency over time.
 *
 * - The service: bench/soak-child.ts (src/main.ts as is, plus a memory probe over IPC), started with
 *   `node --expose-gc --import tsx` on a fresh DATA_DIR on 127.0.0.1, RATE_LIMIT=off, WEBHOOK_ALLOW_HTTP and
 *   WEBHOOK_ALLOW_PRIVATE_NETWORKS on. `--expose-gc` is given to that child only.
 * - A webhook receiver in the bench process: node:http on 127.0.0.1 answering 200, counting distinct
 *   `webhook-id`s per tenant and event type.
 * - `tenants` tenants, each with an API key (observations and CV scopes) and one webhook subscription to
 *   observation.created, observation.updated, cv.job.completed and cv.job.failed; a few observations each
 *   before the clock starts.
 * - Load: open loop at `rate` requests/s (BENCH_SOAK_RATE, 40), each request started on its schedule whether
 *   or not the earlier ones have answered (at most 256 in flight; a request that would exceed that is
 *   counted as dropped, an error). Mix, tenant chosen at random: 30 % create, 22 % merge patch of a recent
 *   observation, 18 % list (limit 50), 8 % list with `minPosition` of the tenant's last write, 12 % PNG
 *   upload (a 96 × 64 image made with sharp) to an observation without media, 10 % CV job on an observation
 *   with media (the two built-in models in turn). Latency runs from the request's scheduled start to the
 *   end of its body, so a stalled bench or service shows as latency rather than as fewer requests.
 * - Every `sampleS` (10 s): the child's RSS (VmRSS of /proc/<pid>/status) and, over IPC, its heap used right
 *   after global.gc(); p50/p99, req/s and errors of the requests started in the last interval; the same per
 *   minute. Requests in flight while the forced GC ran are left out of the latency figures (a stall only the
 *   bench causes), not out of the counts.
 * - Expected answers: 201 create, 200 patch and list, 201 upload, 202 CV job; 409 on a write (two writes
 *   raced on one stream) is expected and counted as a conflict. Anything else, a network error or a
 *   dropped request is an error; 5xx are counted apart too.
 * - After the load: every created observation must show up in its tenant's list (first a list with
 *   `minPosition` of the last write, then every page), and every webhook event the writes imply must reach
 *   the receiver within `drainS` (BENCH_SOAK_DRAIN_S, 60): one observation.created per 201 create, one
 *   observation.updated per patch that answered X-Position and per 201 upload, one cv.job.completed or
 *   cv.job.failed per 202 job.
 *
 * Targets. Warm-up is the first 20 % of the run (2 of 10 minutes):
 * - heap growth: heap used after GC in the last sample minus that of the first sample at or after the
 *   warm-up, under 5 MiB per 8 minutes, scaled to the time after warm-up (1 MiB for a 120 s run);
 * - p99 flat: p99 of the requests started in the last window ÷ p99 of those started in the first window
 *   after warm-up, under 1.25; a window is one minute, or half of the time after warm-up when that is
 *   shorter;
 * - no 5xx, no other error, every observation projected, every webhook event delivered.
 */

export type SoakOperation = 'create' | 'patch' | 'list' | 'listMinPosition' | 'media' | 'cv';

const mix: readonly [SoakOperation, number][] = [
  ['create', 30],
  ['patch', 22],
  ['list', 18],
  ['listMinPosition', 8],
  ['media', 12],
  ['cv', 10],
];
const expectedStatus: Record<SoakOperation, number> = {
  create: 201,
  patch: 200,
  list: 200,
  listMinPosition: 200,
  media: 201,
  cv: 202,
};
const webhookEvents = ['observation.created', 'observation.updated', 'cv.job.completed', 'cv.job.failed'];
const models = ['image-quality', 'object-proposals'] as const;
const maxInFlight = 256;
const MiB = 1024 * 1024;

export interface SoakSettings {
  durationS: number;
  rate: number;
  tenants: number;
  sampleS: number;
  drainS: number;
}

export interface SoakInterval {
  /** Seconds since the load started: requests scheduled in [fromS, toS). */
  fromS: number;
  toS: number;
  requests: number;
  requestsPerSecond: number;
  p50Ms: number;
  p99Ms: number;
  errors: number;
}

export interface SoakSample extends SoakInterval {
  /** The sample's time, seconds since the load started (= toS). */
  t: number;
  rssMiB: number;
  heapUsedMiB: number;
  heapTotalMiB: number;
  externalMiB: number;
  /** How long the forced full GC took in the service. */
  gcMs: number;
}

export interface SoakMinute extends SoakInterval {
  /** The memory of the last sample in the minute. */
  rssMiB: number;
  heapUsedMiB: number;
}

export interface SoakResults {
  settings: SoakSettings;
  warmupS: number;
  /** The service before the load (after setup), then every sampleS, the last at the end of the load. */
  samples: SoakSample[];
  minutes: SoakMinute[];
  operations: Record<
    SoakOperation,
    { requests: number; p50Ms: number; p99Ms: number; maxMs: number; statuses: Record<string, number> }
  >;
  totals: {
    requests: number;
    requestsPerSecond: number;
    p50Ms: number;
    p99Ms: number;
    /** Requests in flight during a forced GC, left out of every latency figure. */
    probed: number;
    /** The p99 with them. */
    p99IncludingProbedMs: number;
    errors: number;
    serverErrors: number;
    conflicts: number;
    dropped: number;
    networkErrors: number;
  };
  heap: {
    baselineAtS: number;
    baselineMiB: number;
    endMiB: number;
    growthMiB: number;
    limitMiB: number;
    /** Least-squares slope of heap after GC over the samples from the baseline on. */
    slopeMiBPerMinute: number;
    /** That slope times the time from the baseline to the end: the growth of the trend, less noisy. */
    fittedGrowthMiB: number;
  };
  rss: { startMiB: number; baselineMiB: number; endMiB: number; maxMiB: number };
  p99: {
    windowS: number;
    first: { fromS: number; toS: number; p99Ms: number; requests: number };
    last: { fromS: number; toS: number; p99Ms: number; requests: number };
    ratio: number;
  };
  projection: { created: number; projected: number; missing: number; waitMs: number };
  webhooks: {
    expected: number;
    received: number;
    missing: number;
    duplicates: number;
    unexpected: number;
    drainMs: number;
    byType: Record<string, { expected: number; received: number }>;
  };
  checks: Check[];
}

export interface RequestRecord {
  /** Scheduled start, ms since the load started. */
  at: number;
  ms: number;
  op: SoakOperation;
  /** 0 for a network error or a dropped request. */
  status: number;
  dropped: boolean;
  /** In flight while the service ran a forced GC for a sample: left out of the latency figures. */
  probed: boolean;
}

interface Tenant {
  id: string;
  key: string;
  adminKey: string;
  created: string[];
  withoutMedia: string[];
  withMedia: string[];
  lastPosition: number;
}

const log = (message: string) => console.log(`[soak ${new Date().toISOString().slice(11, 19)}] ${message}`);

/** A small deterministic PRNG, so that two runs send the same mix. */
const prng = (seed: number) => () => {
  seed = (seed + 0x6d2b79f5) | 0;
  let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
  t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
  return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
};

/** Distinct small PNGs: a gray background with a darker box that moves from one image to the next. */
const pngPool = async (count: number): Promise<Buffer[]> => {
  const width = 96;
  const height = 64;
  const images: Buffer[] = [];
  for (let i = 0; i < count; i += 1) {
    const pixels = Buffer.alloc(width * height, 170);
    const x0 = (i * 7) % (width - 24);
    const y0 = (i * 5) % (height - 16);
    for (let y = y0; y < y0 + 16; y += 1) pixels.fill(40 + (i % 50), y * width + x0, y * width + x0 + 24);
    images.push(
      await sharp(pixels, { raw: { width, height, channels: 1 } })
        .toColourspace('srgb')
        .png()
        .toBuffer(),
    );
  }
  return images;
};

/** The webhook receiver: 200 to every POST, distinct webhook-ids per `${tenantId} ${type}`. */
const startReceiver = async () => {
  const seen = new Map<string, Set<string>>();
  let duplicates = 0;
  let unparsable = 0;
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      try {
        const envelope = JSON.parse(Buffer.concat(chunks).toString('utf8')) as {
          id: string;
          type: string;
          tenantId: string;
        };
        const id = String(req.headers['webhook-id'] ?? envelope.id);
        const key = `${envelope.tenantId} ${envelope.type}`;
        let ids = seen.get(key);
        if (!ids) seen.set(key, (ids = new Set()));
        if (ids.has(id)) duplicates += 1;
        else ids.add(id);
      } catch {
        unparsable += 1;
      }
      res.statusCode = 200;
      res.end();
    });
  });
  server.keepAliveTimeout = 30_000;
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/hook`,
    count: (tenantId: string, type: string) => seen.get(`${tenantId} ${type}`)?.size ?? 0,
    duplicates: () => duplicates,
    unparsable: () => unparsable,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
};

interface ProbeReply {
  type: 'soak-sample';
  id: number;
  rss: number;
  heapUsed: number;
  heapTotal: number;
  external: number;
  arrayBuffers: number;
  gcMs: number;
}

/** bench/soak-child.ts with --expose-gc and an IPC channel; killed when the bench exits, whatever the cause. */
const startService = async (env: Record<string, string>) => {
  const port = await freePort();
  const child = spawn(
    process.execPath,
    ['--expose-gc', '--import', 'tsx', `${projectRoot}/bench/soak-child.ts`],
    {
      cwd: projectRoot,
      env: { ...process.env, ...env, PORT: String(port), HOST: '127.0.0.1' },
      stdio: ['ignore', 'pipe', 'pipe', 'ipc'],
    },
  );
  const killOnExit = () => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  };
  process.on('exit', killOnExit);
  let output = '';
  const collect = (chunk: Buffer) => {
    output = (output + chunk.toString('utf8')).slice(-65536);
  };
  child.stdout?.on('data', collect);
  child.stderr?.on('data', collect);
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  const handle: Child = { process: child, output: () => output, exited };
  const base = `http://127.0.0.1:${port}`;
  await waitHealthy(`${base}/health`, handle);

  let nextId = 0;
  const pending = new Map<number, (reply: ProbeReply) => void>();
  child.on('message', (message: ProbeReply) => {
    if (message?.type === 'soak-sample') pending.get(message.id)?.(message);
  });
  const probe = (): Promise<ProbeReply & { procRss: number | null }> => {
    const id = (nextId += 1);
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        pending.delete(id);
        reject(new Error('the service did not answer the memory probe within 30 s'));
      }, 30_000);
      pending.set(id, (reply) => {
        clearTimeout(timer);
        pending.delete(id);
        resolve({ ...reply, procRss: procRss(child.pid) });
      });
      child.send({ type: 'soak-sample', id });
    });
  };
  const stop = async () => {
    if (child.exitCode === null && child.signalCode === null) {
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 15_000);
      await exited;
      clearTimeout(timer);
    }
    process.off('exit', killOnExit);
  };
  return { base, probe, stop, output: () => output, pid: child.pid };
};

/** VmRSS of /proc/<pid>/status in bytes; null where there is no /proc. */
const procRss = (pid: number | undefined): number | null => {
  if (pid === undefined) return null;
  try {
    const match = /^VmRSS:\s+(\d+)\s+kB/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return match ? Number(match[1]) * 1024 : null;
  } catch {
    return null;
  }
};

const interval = (records: readonly RequestRecord[], fromS: number, toS: number): SoakInterval => {
  const inside = records.filter((r) => r.at >= fromS * 1000 && r.at < toS * 1000);
  const sorted = inside
    .filter(timed)
    .map((r) => r.ms)
    .sort((a, b) => a - b);
  return {
    fromS,
    toS,
    requests: inside.length,
    requestsPerSecond: inside.length / Math.max(1e-9, toS - fromS),
    p50Ms: percentile(sorted, 50),
    p99Ms: percentile(sorted, 99),
    errors: inside.filter(isError).length,
  };
};

/** The requests the latency figures count: answered (or failed) on their own, not dropped, not probed. */
const timed = (r: RequestRecord) => !r.dropped && !r.probed;

const isError = (r: RequestRecord) => r.status !== expectedStatus[r.op] && r.status !== 409;

const slope = (points: readonly { x: number; y: number }[]): number => {
  if (points.length < 2) return NaN;
  const mx = points.reduce((s, p) => s + p.x, 0) / points.length;
  const my = points.reduce((s, p) => s + p.y, 0) / points.length;
  const sxy = points.reduce((s, p) => s + (p.x - mx) * (p.y - my), 0);
  const sxx = points.reduce((s, p) => s + (p.x - mx) ** 2, 0);
  return sxx === 0 ? NaN : sxy / sxx;
};

/**
 * The figures, the curve and the targets of a soak, from what the load recorded (times in ms since the load
 * started) and the samples. Separate from the run, so that it can be checked on made-up records.
 */
export const soakFigures = ({
  settings,
  records,
  samples,
  probeWindows,
  rssStartMiB,
  projection,
  webhooks,
}: {
  settings: SoakSettings;
  records: RequestRecord[];
  samples: SoakSample[];
  probeWindows: readonly { from: number; to: number }[];
  rssStartMiB: number | null;
  projection: SoakResults['projection'];
  webhooks: SoakResults['webhooks'];
}): SoakResults => {
  const { durationS, sampleS, drainS } = settings;
  const warmupS = durationS * 0.2;
  // A forced full GC stops the service for tens of milliseconds (more on a large heap): a stall the bench
  // makes itself, which production never has. The requests in flight meanwhile are left out of the latencies.
  for (const r of records) {
    if (r.dropped) continue;
    const start = r.at;
    const end = start + r.ms;
    r.probed = probeWindows.some((w) => start < w.to && end > w.from);
  }
  // Figures. The interval figures of each sample again, now that every request has answered.
  for (const [i, sample] of samples.entries())
    if (sample.t > 0)
      samples[i] = { ...sample, ...interval(records, Math.max(0, sample.t - sampleS), sample.t) };
  const minutes: SoakMinute[] = [];
  for (let from = 0; from < durationS; from += 60) {
    const to = Math.min(durationS, from + 60);
    const last = [...samples].reverse().find((s) => s.t <= to + 1e-9)!;
    minutes.push({ ...interval(records, from, to), rssMiB: last.rssMiB, heapUsedMiB: last.heapUsedMiB });
  }
  const baseline = samples.find((s) => s.t >= warmupS - 1e-9)!;
  const end = samples.at(-1)!;
  const afterWarmup = durationS - baseline.t;
  const limitMiB = Math.round((500 * afterWarmup) / 480) / 100;
  const windowS = Math.min(60, (durationS - warmupS) / 2);
  const first = interval(records, warmupS, warmupS + windowS);
  const last = interval(records, durationS - windowS, durationS);
  const allSorted = records
    .filter(timed)
    .map((r) => r.ms)
    .sort((a, b) => a - b);
  const withProbed = records
    .filter((r) => !r.dropped)
    .map((r) => r.ms)
    .sort((a, b) => a - b);
  const operationFigures = {} as SoakResults['operations'];
  for (const [op] of mix) {
    const mine = records.filter((r) => r.op === op && !r.dropped);
    const sorted = mine
      .filter(timed)
      .map((r) => r.ms)
      .sort((a, b) => a - b);
    const statuses: Record<string, number> = {};
    for (const r of mine) statuses[String(r.status)] = (statuses[String(r.status)] ?? 0) + 1;
    operationFigures[op] = {
      requests: mine.length,
      p50Ms: percentile(sorted, 50),
      p99Ms: percentile(sorted, 99),
      maxMs: sorted.at(-1) ?? NaN,
      statuses,
    };
  }
  const totals: SoakResults['totals'] = {
    requests: records.length,
    requestsPerSecond: records.length / durationS,
    p50Ms: percentile(allSorted, 50),
    p99Ms: percentile(allSorted, 99),
    probed: records.filter((r) => r.probed).length,
    p99IncludingProbedMs: percentile(withProbed, 99),
    errors: records.filter(isError).length,
    serverErrors: records.filter((r) => r.status >= 500).length,
    conflicts: records.filter((r) => r.status === 409).length,
    dropped: records.filter((r) => r.dropped).length,
    networkErrors: records.filter((r) => r.status === 0 && !r.dropped).length,
  };
  const slopeMiBPerMinute = slope(
    samples.filter((s) => s.t >= baseline.t).map((s) => ({ x: s.t / 60, y: s.heapUsedMiB })),
  );
  const heap: SoakResults['heap'] = {
    baselineAtS: baseline.t,
    baselineMiB: baseline.heapUsedMiB,
    endMiB: end.heapUsedMiB,
    growthMiB: end.heapUsedMiB - baseline.heapUsedMiB,
    limitMiB,
    slopeMiBPerMinute,
    fittedGrowthMiB: (slopeMiBPerMinute * afterWarmup) / 60,
  };
  const p99: SoakResults['p99'] = {
    windowS,
    first: { fromS: first.fromS, toS: first.toS, p99Ms: first.p99Ms, requests: first.requests },
    last: { fromS: last.fromS, toS: last.toS, p99Ms: last.p99Ms, requests: last.requests },
    ratio: last.p99Ms / first.p99Ms,
  };
  const checks = [
    check(`soak heap growth after the first ${warmupS.toFixed(0)} s`, heap.growthMiB, '<', limitMiB, ' MiB'),
    check(
      `soak p99 last ${windowS.toFixed(0)} s ÷ first ${windowS.toFixed(0)} s after warm-up`,
      p99.ratio,
      '<',
      1.25,
    ),
    check('soak 5xx responses', totals.serverErrors, '=', 0),
    check('soak errors (unexpected status, network, dropped)', totals.errors, '=', 0),
    check('soak observations not projected', projection.missing, '=', 0),
    check(`soak webhook events not delivered within ${drainS} s`, webhooks.missing, '=', 0),
  ];
  return {
    settings,
    warmupS,
    samples,
    minutes,
    operations: operationFigures,
    totals,
    heap,
    rss: {
      startMiB: rssStartMiB ?? samples[0]!.rssMiB,
      baselineMiB: baseline.rssMiB,
      endMiB: end.rssMiB,
      maxMiB: Math.max(...samples.map((s) => s.rssMiB)),
    },
    p99,
    projection,
    webhooks,
    checks,
  };
};

export const runSoak = async (settings: SoakSettings): Promise<SoakResults> => {
  const { durationS, rate, tenants: tenantCount, sampleS, drainS } = settings;
  if (durationS < 10 || rate <= 0 || tenantCount < 1 || sampleS <= 0)
    throw new Error(`soak: bad settings ${JSON.stringify(settings)}`);
  const warmupS = durationS * 0.2;
  const random = prng(10);
  const images = await pngPool(64);
  const receiver = await startReceiver();
  const { dataDir, adminKey, env } = benchService('soak');
  const agent = new Agent({ connections: 64, keepAliveTimeout: 4000 });
  let service: Awaited<ReturnType<typeof startService>> | null = null;
  try {
    service = await startService({
      ...env,
      WEBHOOK_ALLOW_HTTP: 'true',
      WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true',
    });
    const base = service.base;
    log(`service pid ${service.pid} on ${base}, DATA_DIR ${dataDir}`);

    const call = async (
      method: 'GET' | 'POST' | 'PATCH',
      path: string,
      key: string,
      body?: unknown,
    ): Promise<{ status: number; headers: Record<string, string | string[] | undefined>; text: string }> => {
      const binary = Buffer.isBuffer(body);
      const response = await request(`${base}${path}`, {
        method,
        dispatcher: agent,
        headers: {
          'x-api-key': key,
          ...(body === undefined
            ? {}
            : { 'content-type': binary ? 'application/octet-stream' : 'application/json' }),
        },
        body: body === undefined ? undefined : binary ? body : JSON.stringify(body),
        headersTimeout: 30_000,
        bodyTimeout: 30_000,
      });
      return { status: response.statusCode, headers: response.headers, text: await response.body.text() };
    };
    const must = async (status: number, ...args: Parameters<typeof call>) => {
      const answer = await call(...args);
      if (answer.status !== status)
        throw new Error(`${args[0]} ${args[1]} answered ${answer.status}: ${answer.text}`);
      return answer;
    };
    const positionOf = (headers: Record<string, string | string[] | undefined>): number | null => {
      const raw = headers['x-position'];
      const value = Number(Array.isArray(raw) ? raw[0] : raw);
      return raw === undefined || !Number.isFinite(value) ? null : value;
    };

    // Setup: tenants, keys, subscriptions, a few observations each (two with media), before the clock.
    const expected = new Map<string, number>(); // `${tenantId} ${type}` → events the writes imply
    const expect = (tenant: Tenant, type: 'observation.created' | 'observation.updated' | 'cv') => {
      const key = `${tenant.id} ${type}`;
      expected.set(key, (expected.get(key) ?? 0) + 1);
    };
    const tenants: Tenant[] = [];
    for (let i = 0; i < tenantCount; i += 1) {
      const created = JSON.parse(
        (
          await must(201, 'POST', '/v1/tenants', adminKey, {
            name: `soak ${i}`,
            notificationEmail: `soak${i}@example.com`,
          })
        ).text,
      ) as { id: string; adminApiKey: string };
      const tenantPath = `/v1/tenants/${created.id}`;
      const apiKey = JSON.parse(
        (
          await must(201, 'POST', `${tenantPath}/api-keys`, created.adminApiKey, {
            name: 'soak',
            scopes: ['observations:read', 'observations:write', 'cv:read', 'cv:write'],
          })
        ).text,
      ) as { key: string };
      await must(201, 'POST', `${tenantPath}/webhooks`, created.adminApiKey, {
        url: receiver.url,
        events: webhookEvents,
        secret: randomBytes(24).toString('hex'),
      });
      tenants.push({
        id: created.id,
        key: apiKey.key,
        adminKey: created.adminApiKey,
        created: [],
        withoutMedia: [],
        withMedia: [],
        lastPosition: 0,
      });
    }

    let sequence = 0;
    const observationBody = () => {
      sequence += 1;
      return {
        observedAt: new Date(Date.UTC(2025, 4, 1) + sequence * 60_000).toISOString(),
        position: { lat: 51.75 + (sequence % 100) / 1000, lon: -1.25 - (sequence % 77) / 1000 },
        notes: `soak observation ${sequence}`,
        attributes: { species: sequence % 3 === 0 ? 'fox' : 'badger', count: 1 + (sequence % 5) },
      };
    };
    const pick = <T>(list: readonly T[], recent: number): T | undefined =>
      list.length === 0
        ? undefined
        : list[list.length - 1 - Math.floor(random() * Math.min(recent, list.length))];
    const noteWrite = (tenant: Tenant, headers: Record<string, string | string[] | undefined>) => {
      const position = positionOf(headers);
      if (position !== null) tenant.lastPosition = Math.max(tenant.lastPosition, position);
      return position;
    };

    /** One operation; its answer's status (checked by the caller) and the state it leaves behind. */
    const operations: Record<SoakOperation, (tenant: Tenant) => Promise<number>> = {
      create: async (tenant) => {
        const answer = await call(
          'POST',
          `/v1/tenants/${tenant.id}/observations`,
          tenant.key,
          observationBody(),
        );
        if (answer.status === 201) {
          const { id } = JSON.parse(answer.text) as { id: string };
          tenant.created.push(id);
          tenant.withoutMedia.push(id);
          noteWrite(tenant, answer.headers);
          expect(tenant, 'observation.created');
        }
        return answer.status;
      },
      patch: async (tenant) => {
        const id = pick(tenant.created, 200);
        if (!id) return operations.create(tenant);
        sequence += 1;
        const answer = await call('PATCH', `/v1/tenants/${tenant.id}/observations/${id}`, tenant.key, {
          notes: `soak patch ${sequence}`,
          attributes: { patched: sequence },
        });
        if (answer.status === 200 && noteWrite(tenant, answer.headers) !== null)
          expect(tenant, 'observation.updated');
        return answer.status;
      },
      list: async (tenant) =>
        (await call('GET', `/v1/tenants/${tenant.id}/observations?limit=50`, tenant.key)).status,
      listMinPosition: async (tenant) =>
        (
          await call(
            'GET',
            `/v1/tenants/${tenant.id}/observations?limit=50&minPosition=${tenant.lastPosition}`,
            tenant.key,
          )
        ).status,
      media: async (tenant) => {
        const id = tenant.withoutMedia.shift();
        if (!id) return operations.create(tenant);
        sequence += 1;
        const answer = await call(
          'POST',
          `/v1/tenants/${tenant.id}/observations/${id}/media`,
          tenant.key,
          images[sequence % images.length],
        );
        if (answer.status === 201) {
          tenant.withMedia.push(id);
          noteWrite(tenant, answer.headers);
          expect(tenant, 'observation.updated');
        }
        return answer.status;
      },
      cv: async (tenant) => {
        const id = pick(tenant.withMedia, 100);
        if (!id) return operations.media(tenant);
        sequence += 1;
        const answer = await call('POST', `/v1/tenants/${tenant.id}/cv-jobs`, tenant.key, {
          observationId: id,
          model: models[sequence % models.length],
        });
        if (answer.status === 202) {
          noteWrite(tenant, answer.headers);
          expect(tenant, 'cv');
        }
        return answer.status;
      },
    };
    // A fallback (patch before any create, …) runs another operation: its status is checked against that one.
    const expectedFor = (op: SoakOperation, tenant: Tenant): SoakOperation => {
      if (op === 'patch' && tenant.created.length === 0) return 'create';
      if (op === 'media' && tenant.withoutMedia.length === 0) return 'create';
      if (op === 'cv' && tenant.withMedia.length === 0)
        return tenant.withoutMedia.length === 0 ? 'create' : 'media';
      return op;
    };

    for (const tenant of tenants) {
      for (let i = 0; i < 4; i += 1) {
        if ((await operations.create(tenant)) !== 201) throw new Error('setup: create failed');
      }
      for (let i = 0; i < 2; i += 1) {
        if ((await operations.media(tenant)) !== 201) throw new Error('setup: media upload failed');
      }
    }

    // The load, with a sample every sampleS.
    const records: RequestRecord[] = [];
    const samples: SoakSample[] = [];
    let inFlight = 0;
    const inFlightDone = new Set<Promise<void>>();
    const probeWindows: { from: number; to: number }[] = []; // performance.now() while each probe ran
    const takeSample = async (t: number) => {
      const from = performance.now();
      const reply = await service!.probe();
      probeWindows.push({ from, to: performance.now() });
      const stats = interval(records, Math.max(0, t - sampleS), t);
      const sample: SoakSample = {
        ...stats,
        t,
        rssMiB: (reply.procRss ?? reply.rss) / MiB,
        heapUsedMiB: reply.heapUsed / MiB,
        heapTotalMiB: reply.heapTotal / MiB,
        externalMiB: reply.external / MiB,
        gcMs: reply.gcMs,
      };
      samples.push(sample);
      log(
        `t=${String(Math.round(t)).padStart(4)} s  RSS ${sample.rssMiB.toFixed(1)} MiB  heap after GC ` +
          `${sample.heapUsedMiB.toFixed(1)} MiB (GC ${sample.gcMs.toFixed(0)} ms)  ` +
          (t === 0
            ? 'before the load'
            : `${stats.requestsPerSecond.toFixed(1)} req/s  p50 ${stats.p50Ms.toFixed(1)} ms  ` +
              `p99 ${stats.p99Ms.toFixed(1)} ms  errors ${records.filter(isError).length} so far  in flight ${inFlight}`),
      );
    };
    const rssStart = procRss(service.pid);
    await takeSample(0);
    log(
      `load: ${rate} req/s for ${durationS} s over ${tenantCount} tenants; warm-up ${warmupS.toFixed(0)} s; ` +
        `samples every ${sampleS} s`,
    );

    const periodMs = 1000 / rate;
    const total = Math.floor(durationS * rate);
    const loadStart = performance.now();
    const sampling = (async () => {
      for (let k = 1; k * sampleS < durationS; k += 1) {
        const due = loadStart + k * sampleS * 1000;
        const wait = due - performance.now();
        if (wait > 0) await sleep(wait);
        await takeSample(k * sampleS);
      }
    })();
    for (let i = 0; i < total; i += 1) {
      const scheduled = i * periodMs;
      const wait = loadStart + scheduled - performance.now();
      if (wait > 0) await sleep(wait);
      const tenant = tenants[Math.floor(random() * tenants.length)]!;
      let roll = random() * 100;
      let op: SoakOperation = 'create';
      for (const [name, weight] of mix) {
        if (roll < weight) {
          op = name;
          break;
        }
        roll -= weight;
      }
      op = expectedFor(op, tenant);
      if (inFlight >= maxInFlight) {
        records.push({ at: scheduled, ms: 0, op, status: 0, dropped: true, probed: false });
        continue;
      }
      inFlight += 1;
      const done: Promise<void> = operations[op](tenant)
        .then(
          (status) => {
            records.push({
              at: scheduled,
              ms: performance.now() - loadStart - scheduled,
              op,
              status,
              dropped: false,
              probed: false,
            });
          },
          () => {
            records.push({
              at: scheduled,
              ms: performance.now() - loadStart - scheduled,
              op,
              status: 0,
              dropped: false,
              probed: false,
            });
          },
        )
        .finally(() => {
          inFlight -= 1;
          inFlightDone.delete(done);
        });
      inFlightDone.add(done);
    }
    const endWait = loadStart + durationS * 1000 - performance.now();
    if (endWait > 0) await sleep(endWait);
    await sampling;
    // In-flight requests finish before the last sample; the requests are bounded by their own time-outs.
    await Promise.all([...inFlightDone]);
    await takeSample(durationS);
    log(`load done: ${records.length} requests; checking projection and webhooks (drain up to ${drainS} s)`);

    // Every created observation projected.
    const lastPosition = Math.max(...tenants.map((t) => t.lastPosition));
    const projectionStarted = performance.now();
    let created = 0;
    let projected = 0;
    for (const tenant of tenants) {
      const path = `/v1/tenants/${tenant.id}/observations`;
      for (let attempt = 0; ; attempt += 1) {
        const answer = await call('GET', `${path}?limit=1&minPosition=${lastPosition}`, tenant.key);
        if (answer.status === 200) break;
        if (answer.status !== 503 || attempt >= Math.max(1, drainS / 5))
          throw new Error(
            `GET ${path}?minPosition=${lastPosition} answered ${answer.status}: ${answer.text}`,
          );
      }
      const ids = new Set<string>();
      let cursor: string | null = null;
      do {
        const answer = await must(
          200,
          'GET',
          `${path}?limit=200${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`,
          tenant.key,
        );
        const page = JSON.parse(answer.text) as { data: { id: string }[]; nextCursor: string | null };
        for (const item of page.data) ids.add(item.id);
        cursor = page.nextCursor;
      } while (cursor);
      created += tenant.created.length;
      projected += tenant.created.filter((id) => ids.has(id)).length;
    }
    const projectionWaitMs = performance.now() - projectionStarted;

    // Every webhook event delivered, within the drain period.
    const byType = () => {
      const result: Record<string, { expected: number; received: number }> = {};
      for (const tenant of tenants) {
        for (const type of ['observation.created', 'observation.updated', 'cv'] as const) {
          const want = expected.get(`${tenant.id} ${type}`) ?? 0;
          const got =
            type === 'cv'
              ? receiver.count(tenant.id, 'cv.job.completed') + receiver.count(tenant.id, 'cv.job.failed')
              : receiver.count(tenant.id, type);
          const entry = (result[type === 'cv' ? 'cv.job.completed|failed' : type] ??= {
            expected: 0,
            received: 0,
          });
          entry.expected += want;
          entry.received += Math.min(got, want);
        }
      }
      return result;
    };
    const missingNow = () => Object.values(byType()).reduce((n, e) => n + e.expected - e.received, 0);
    const drainStarted = performance.now();
    while (missingNow() > 0 && performance.now() - drainStarted < drainS * 1000) await sleep(250);
    const drainMs = performance.now() - drainStarted;
    await sleep(500); // a duplicate would arrive now
    const webhookTypes = byType();
    const expectedTotal = Object.values(webhookTypes).reduce((n, e) => n + e.expected, 0);
    const receivedTotal = Object.values(webhookTypes).reduce((n, e) => n + e.received, 0);
    let arrivedTotal = 0;
    for (const tenant of tenants)
      for (const type of webhookEvents) arrivedTotal += receiver.count(tenant.id, type);

    const projection = { created, projected, missing: created - projected, waitMs: projectionWaitMs };
    const webhooks: SoakResults['webhooks'] = {
      expected: expectedTotal,
      received: receivedTotal,
      missing: expectedTotal - receivedTotal,
      duplicates: receiver.duplicates(),
      unexpected: arrivedTotal - receivedTotal + receiver.unparsable(),
      drainMs,
      byType: webhookTypes,
    };
    return soakFigures({
      settings,
      records,
      samples,
      probeWindows: probeWindows.map((w) => ({ from: w.from - loadStart, to: w.to - loadStart })),
      rssStartMiB: rssStart === null ? null : rssStart / MiB,
      projection,
      webhooks,
    });
  } catch (error) {
    throw new Error(`${(error as Error).message}\nservice output:\n${service?.output() ?? ''}`, {
      cause: error,
    });
  } finally {
    await service?.stop();
    await agent.close();
    await receiver.close();
    removeTempDir(dataDir);
  }
};
