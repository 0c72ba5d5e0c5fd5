import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import autocannon, { type Instance, type Result } from 'autocannon';
import { Agent, request } from 'undici';
import { observationStream } from './events.js';
import { json, observationBody, startServer } from './http.js';
import { removeTempDir, stopChild, type Child } from './processes.js';
import { benchService, provision } from './provision.js';
import { latencyFigures, type LatencyFigures } from './stats.js';
import { openEventStoreAt } from './targets.js';

/**
 * The `webhooks` phase (issue 4), against a receiver in a child process of its own (bench/webhook-receiver.ts,
 * node:http on 127.0.0.1 answering 204) and a service with one subscription to `observation.created`.
 *
 * - Latency, on an idle service: observations are created one at a time, `intervalMs` apart, and the
 *   receiver notes when each delivery arrives. Commit time is the event's `metadata.occurredAt` (the
 *   payload's `timestamp`): the command handler takes it just before the append's transaction, so the
 *   figure includes the append itself and is an upper bound of commit-to-first-attempt. The 201 response
 *   comes after the commit (and after the response is written), so the time from it is a lower bound; it
 *   is reported beside, and can be negative when the delivery arrives before the client reads its 201.
 *   Target: p99 < 500 ms.
 * - Throughput: with the service stopped, `deliveries` ObservationRecorded events are appended straight to
 *   its event store; the service is started again and works off the backlog (the webhook projector
 *   schedules a delivery per event, attempts claim, POST and record the outcome). Deliveries/s = arrivals
 *   over the receiver's time from the first arrival to the last. Baseline: the same bodies and signature
 *   headers POSTed with undici from the bench process to the same receiver, at the same concurrency (one
 *   subscription: WEBHOOK_CONCURRENCY_PER_SUBSCRIPTION), timed the same way: the bodies sent over again up
 *   to at least 10,000 POSTs per run, the median of three runs.
 *   Target: >= 0.60 of it.
 *
 * With `databaseUrl`, the service keeps everything in that PostgreSQL database, and the backlog is appended
 * there.
 */

export interface WebhookResults {
  /** Deliveries of the throughput run (one per backlog event). */
  deliveries: number;
  /** In flight at once, both for the service (per subscription) and the raw baseline. */
  concurrency: number;
  serviceDeliveriesPerSecond: number;
  serviceSeconds: number;
  /** Arrivals beyond one per webhook-id in the service's run (0 expected). */
  duplicates: number;
  rawPostsPerSecond: number;
  rawSeconds: number;
  /** POSTs per raw run: the service's bodies, sent over again up to at least 10,000. */
  rawPosts: number;
  /** service deliveries/s ÷ raw POSTs/s. */
  ratio: number;
  latency: {
    samples: number;
    intervalMs: number;
    /** The steady background creates (another tenant) measured while the samples ran; 0 without. */
    createsPerSecond: number;
    backgroundErrors: number;
    /** Arrival minus the event's occurredAt: the target's measure. */
    fromOccurredAt: LatencyFigures;
    /** Arrival minus the moment the bench read the 201. */
    fromResponse: LatencyFigures;
  };
}

interface Arrival {
  at: number;
  body: string;
  headers: Record<string, string>;
}

const perSubscription = 4;

const receiverClient = (base: string) => {
  const count = async () => Number(await (await fetch(`${base}/count`)).text());
  return {
    count,
    arrivals: async () => (await (await fetch(`${base}/arrivals`)).json()) as Arrival[],
    reset: async () => void (await fetch(`${base}/reset`, { method: 'POST' })).body?.cancel(),
    /** Resolves once `n` deliveries arrived; throws after `timeoutMs`. */
    waitFor: async (n: number, timeoutMs: number, what: string) => {
      const deadline = Date.now() + timeoutMs;
      for (;;) {
        const seen = await count();
        if (seen >= n) return;
        if (Date.now() > deadline)
          throw new Error(`${what}: ${seen} of ${n} deliveries within ${timeoutMs} ms`);
        await sleep(50);
      }
    },
  };
};

/** The consumers' lag lines of a scrape (docs/operations.md#metrics): events and seconds behind. */
const lagLines = (text: string) =>
  text.split('\n').filter((line) => /^obs_consumer_lag_(events|seconds)\{/.test(line));

const totalLag = (lines: readonly string[]) =>
  lines
    .filter((line) => line.startsWith('obs_consumer_lag_events'))
    .reduce((sum, line) => sum + Number(line.split(' ').at(-1)), 0);

/**
 * Scrapes GET /metrics (the platform key, METRICS=platform) every 250 ms until stopped, and keeps the
 * scrape with the most events behind: what `curl /metrics` shows while the service works off a backlog.
 */
const watchLag = (base: string, key: string) => {
  let running = true;
  let peak: string[] = [];
  let last: string[] = [];
  const watching = (async () => {
    while (running) {
      const response = await fetch(`${base}/metrics`, { headers: { 'x-api-key': key } }).catch(() => null);
      if (response?.status === 200) {
        last = lagLines(await response.text());
        if (totalLag(last) > totalLag(peak)) peak = last;
      } else await response?.body?.cancel();
      await sleep(250);
    }
  })();
  return {
    stop: async () => {
      running = false;
      await watching;
      return { peak, last };
    },
  };
};

/** Deliveries per second over the receiver's span from the first arrival to the last. */
const rate = (arrivals: readonly Arrival[]) => {
  const times = arrivals.map((a) => a.at);
  const seconds = (Math.max(...times) - Math.min(...times)) / 1000;
  return { seconds, perSecond: (arrivals.length - 1) / seconds };
};

/** The raw baseline: `concurrency` loops POSTing the bodies in turn, each waiting for its answer. */
const rawPosts = async (url: string, arrivals: readonly Arrival[], concurrency: number) => {
  const agent = new Agent({ connections: 16 });
  try {
    let next = 0;
    const loop = async () => {
      for (let i = next++; i < arrivals.length; i = next++) {
        const { body, headers } = arrivals[i]!;
        const response = await request(url, { method: 'POST', body, headers, dispatcher: agent });
        await response.body.dump();
        if (response.statusCode !== 204) throw new Error(`the receiver answered ${response.statusCode}`);
      }
    };
    await Promise.all(Array.from({ length: concurrency }, loop));
  } finally {
    await agent.close();
  }
};

/**
 * Creates in another tenant (no subscriptions there) at a steady rate until stopped: the load under which the
 * commit → first attempt latency is measured. They go through the same projector and projections.
 */
const steadyCreates = (url: string, headers: Record<string, string>, perSecond: number) => {
  let instance!: Instance;
  const result = new Promise<Result>((resolve, reject) => {
    instance = autocannon(
      {
        url,
        method: 'POST',
        headers: { ...json, ...headers },
        body: observationBody,
        connections: 10,
        overallRate: perSecond,
        duration: 3600,
        timeout: 10,
      },
      (error, done) => (error ? reject(error) : resolve(done)),
    );
  });
  return {
    stop: async () => {
      instance.stop();
      return result;
    },
  };
};

export const runWebhooks = async ({
  deliveries = 2000,
  samples = 200,
  intervalMs = 20,
  createsPerSecondUnderLatency = 0,
  databaseUrl,
}: {
  deliveries?: number;
  samples?: number;
  intervalMs?: number;
  /** Background creates while the latency is sampled (half the measured maximum in a full run); 0 for none. */
  createsPerSecondUnderLatency?: number;
  /** The service on PostgreSQL, this database, instead of its embedded files. */
  databaseUrl?: string;
} = {}): Promise<WebhookResults> => {
  const { dataDir, adminKey, env: base } = benchService('webhooks');
  const env = {
    ...base,
    WEBHOOK_ALLOW_HTTP: 'true',
    WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true',
    WEBHOOK_CONCURRENCY_PER_SUBSCRIPTION: String(perSubscription),
    ...(databaseUrl ? { DATABASE_URL: databaseUrl } : {}),
  };
  const children: Child[] = [];
  const start = async (file: string, name: string, childEnv: Record<string, string>) => {
    const started = await startServer(file, databaseUrl ? `${name}-postgres` : name, childEnv);
    children.push(started.child);
    return started;
  };
  let service: { child: Child; base: string } | null = null;
  try {
    const receiver = await start('bench/webhook-receiver.ts', 'webhook-receiver', {});
    const hooks = receiverClient(receiver.base);
    service = await start('src/main.ts', 'webhooks', env);
    const principal = await provision(service.base, adminKey);
    const key = principal.tenantAdminKey;
    const tenant = `${service.base}/v1/tenants/${principal.tenantId}`;
    const subscribed = await fetch(`${tenant}/webhooks`, {
      method: 'POST',
      headers: { ...json, 'x-api-key': key },
      body: JSON.stringify({
        url: `${receiver.base}/hook`,
        events: ['observation.created'],
        secret: randomBytes(24).toString('hex'),
      }),
    });
    if (subscribed.status !== 201)
      throw new Error(`POST …/webhooks answered ${subscribed.status}: ${await subscribed.text()}`);

    // Latency on an idle service: a few unmeasured creations first (JIT, first connection).
    const create = async (base: string) => {
      const response = await fetch(`${base}/v1/tenants/${principal.tenantId}/observations`, {
        method: 'POST',
        headers: { ...json, 'x-api-key': key },
        body: observationBody,
      });
      const answeredAt = performance.timeOrigin + performance.now();
      const body = (await response.json()) as { id?: string };
      if (response.status !== 201 || !body.id)
        throw new Error(`POST …/observations answered ${response.status}: ${JSON.stringify(body)}`);
      return { id: body.id, answeredAt };
    };
    const warmup = 20;
    for (let i = 0; i < warmup; i += 1) {
      await create(service.base);
      await sleep(intervalMs);
    }
    await hooks.waitFor(warmup, 30_000, 'warm-up');
    await sleep(1000);
    await hooks.reset();
    const loaded =
      createsPerSecondUnderLatency > 0
        ? await provision(service.base, adminKey).then((other) =>
            steadyCreates(
              `${service!.base}/v1/tenants/${other.tenantId}/observations`,
              other.headers,
              Math.round(createsPerSecondUnderLatency),
            ),
          )
        : null;
    if (loaded) await sleep(1000);
    const answered = new Map<string, number>();
    for (let i = 0; i < samples; i += 1) {
      const { id, answeredAt } = await create(service.base);
      answered.set(id, answeredAt);
      await sleep(intervalMs);
    }
    await hooks.waitFor(samples, 60_000, 'latency');
    const background = await loaded?.stop();
    const fromOccurredAt: number[] = [];
    const fromResponse: number[] = [];
    for (const arrival of await hooks.arrivals()) {
      const payload = JSON.parse(arrival.body) as { timestamp: string; data: { observationId: string } };
      fromOccurredAt.push(arrival.at - Date.parse(payload.timestamp));
      const at = answered.get(payload.data.observationId);
      if (at !== undefined) fromResponse.push(arrival.at - at);
    }
    await stopChild(service.child);

    // Throughput: a backlog appended while the service is down, worked off once it is up again.
    const store = await openEventStoreAt(databaseUrl ?? join(dataDir, 'events.db'));
    try {
      for (let i = 0; i < deliveries; i += 1) {
        const { stream, events } = observationStream(i, 1, principal.tenantId);
        await store.appendToStream(stream, events, 'no_stream');
      }
    } finally {
      await store.close();
    }
    await hooks.reset();
    service = await start('src/main.ts', 'webhooks-backlog', env);
    const lag = watchLag(service.base, adminKey);
    await hooks.waitFor(deliveries, Math.max(120_000, deliveries * 50), 'backlog');
    await sleep(500); // anything delivered twice would arrive now
    const lagSeen = await lag.stop();
    console.log(
      [
        `webhooks: consumer lag from GET /metrics while the ${deliveries}-event backlog was worked off (most behind;`,
        "  lag in seconds counts from each event's occurredAt, and this backlog's events are dated 2025):",
        ...lagSeen.peak.map((line) => `  ${line}`),
        'and at the end:',
        ...lagSeen.last.filter((line) => !line.endsWith(' 0')).map((line) => `  ${line}`),
        lagSeen.last.every((line) => line.endsWith(' 0')) ? '  every consumer at 0' : '',
      ].join('\n'),
    );
    const delivered = await hooks.arrivals();
    await stopChild(service.child);
    const ids = new Set(delivered.map((a) => a.headers['webhook-id']));
    const serviceRate = rate(delivered);

    // The baseline: the same bodies and headers, raw, at the same concurrency, after a warm-up. A few
    // thousand take a fraction of a second, so each run sends them over again up to at least 10,000 POSTs;
    // it runs three times and the median counts.
    const url = `${receiver.base}/hook`;
    await rawPosts(url, delivered.slice(0, 1000), perSubscription);
    const rounds = Math.ceil(10_000 / delivered.length);
    const repeated = Array.from({ length: rounds }, () => delivered).flat();
    const rawRuns: ReturnType<typeof rate>[] = [];
    for (let run = 0; run < 3; run += 1) {
      await hooks.reset();
      await rawPosts(url, repeated, perSubscription);
      await hooks.waitFor(repeated.length, 60_000, 'raw baseline');
      rawRuns.push(rate(await hooks.arrivals()));
    }
    const rawRate = rawRuns.sort((a, b) => a.perSecond - b.perSecond)[1]!;

    return {
      deliveries: delivered.length,
      concurrency: perSubscription,
      serviceDeliveriesPerSecond: serviceRate.perSecond,
      serviceSeconds: serviceRate.seconds,
      duplicates: delivered.length - ids.size,
      rawPostsPerSecond: rawRate.perSecond,
      rawSeconds: rawRate.seconds,
      rawPosts: repeated.length,
      ratio: serviceRate.perSecond / rawRate.perSecond,
      latency: {
        samples: fromOccurredAt.length,
        intervalMs,
        createsPerSecond: background ? (background.requests.total ?? 0) / background.duration : 0,
        backgroundErrors: background ? background.errors + background.timeouts + background.non2xx : 0,
        fromOccurredAt: latencyFigures(fromOccurredAt),
        fromResponse: latencyFigures(fromResponse),
      },
    };
  } catch (error) {
    throw new Error(`${(error as Error).message}\nservice output:\n${service?.child.output() ?? ''}`, {
      cause: error,
    });
  } finally {
    for (const child of children) await stopChild(child);
    removeTempDir(dataDir);
  }
};
