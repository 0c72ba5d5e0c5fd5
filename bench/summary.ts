import type { RebuildPhaseResults } from './audit.js';
import type { AuthResults } from './auth.js';
import type { CvResults } from './cv.js';
import type { GrowthResults } from './growth.js';
import type { HttpResults } from './http.js';
import type { MillionResults } from './million.js';
import { check, renderText, type Check } from './report.js';
import type { ScaleoutResults } from './scaleout.js';
import type { AppendResults, CatchUpResults } from './store.js';
import type { WebhookResults } from './webhooks.js';

/** The targets each phase is held to, and the summary printed to stdout. Phases not run are null. */

export interface Parts {
  http: HttpResults | null;
  scaleout: ScaleoutResults | null;
  append: AppendResults | null;
  catchUp: CatchUpResults | null;
  million: MillionResults | null;
  growth: GrowthResults | null;
  auth: AuthResults | null;
  webhooks: WebhookResults | null;
  cv: CvResults | null;
  rebuild: RebuildPhaseResults | null;
}

const scaleoutChecks = (s: ScaleoutResults): Check[] => [
  check('create req/s, 2 API processes ÷ 1 (+ worker)', s.createRatio, '>=', 1.4),
  check('list req/s, 2 API processes ÷ 1 (+ worker)', s.listRatio, '>=', 1.4),
  check(
    `read-your-writes violations across API processes (${s.readYourWrites.checks} checks)`,
    s.readYourWrites.violations,
    '=',
    0,
  ),
  check(
    'scale-out errors + timeouts + non-2xx + failed checks (sanity)',
    [s.one.create, s.one.list, s.two.create, s.two.list].reduce(
      (n, f) => n + f.errors + f.timeouts + f.non2xx,
      s.readYourWrites.otherFailures,
    ),
    '=',
    0,
  ),
];

const growthChecks = (g: GrowthResults): Check[] => {
  const smallest = g.sizes[0]!.observations.toLocaleString('en-US');
  const largest = g.sizes.at(-1)!.observations.toLocaleString('en-US');
  return [
    ...g.listRatios.map(({ name, ratio }) =>
      check(`list p99 at ${largest} ÷ at ${smallest} observations: ${name}`, ratio, '<=', 2),
    ),
    check(
      `create req/s with ${g.createFullStoreEvents.toLocaleString('en-US')} events ÷ empty store`,
      g.createRatio,
      '>=',
      0.8,
    ),
    check(
      'growth errors + timeouts + non-2xx (sanity)',
      g.sizes.reduce(
        (n, size) => n + size.lists.reduce((m, l) => m + l.failures, 0),
        [g.createEmpty, g.createFull].reduce((n, f) => n + f.errors + f.timeouts + f.non2xx, 0),
      ),
      '=',
      0,
    ),
  ];
};

/**
 * The targets that differ by backend: a rebuild on SQLite at 0.7 of the raw read (issue 13), on PostgreSQL
 * at 0.5 (issue 28).
 */
export interface BackendTargets {
  rebuild: number;
}

export const sqliteTargets: BackendTargets = { rebuild: 0.7 };

export const targetChecks = (
  { http, scaleout, catchUp, million, growth, auth, webhooks, cv, rebuild }: Parts,
  targets: BackendTargets = sqliteTargets,
): Check[] => {
  return [
    ...(http
      ? [
          check(
            'create req/s ÷ CRUD peer insert req/s',
            http.create.requestsPerSecond / http.peerCreate.requestsPerSecond,
            '>=',
            0.5,
          ),
          ...(http.create.cpuMsPerRequest !== null && http.peerCreate.cpuMsPerRequest !== null
            ? [
                check(
                  'creates per CPU-second ÷ CRUD peer inserts per CPU-second',
                  http.peerCreate.cpuMsPerRequest / http.create.cpuMsPerRequest,
                  '>=',
                  0.5,
                ),
              ]
            : []),
          check(
            'list req/s ÷ CRUD peer list req/s',
            http.list.requestsPerSecond / http.peerList.requestsPerSecond,
            '>=',
            0.8,
          ),
          check(
            `create p99 ÷ CRUD peer insert p99 at ${http.connections} connections`,
            http.create.p99Ms / http.peerCreate.p99Ms,
            '<=',
            2,
          ),
          check(
            'HTTP errors + timeouts + non-2xx (sanity)',
            [http.echo, http.peerCreate, http.peerList, http.create, http.list].reduce(
              (n, f) => n + f.errors + f.timeouts + f.non2xx,
              0,
            ),
            '=',
            0,
          ),
        ]
      : []),
    ...(scaleout ? scaleoutChecks(scaleout) : []),
    ...(catchUp
      ? [
          check(
            'projection ÷ filtered raw read',
            catchUp.projectionEventsPerSecond / catchUp.rawReadFilteredEventsPerSecond,
            '>=',
            0.5,
          ),
        ]
      : []),
    ...(million
      ? [
          check(
            `catch-up peak RSS over ${million.events.toLocaleString('en-US')} events`,
            million.peakRssMb,
            '<',
            300,
            ' MB',
          ),
        ]
      : []),
    ...(growth ? growthChecks(growth) : []),
    ...(auth
      ? [
          check('API-key list req/s ÷ unauthenticated', auth.apiKeyPerOpen, '>=', 0.85),
          check('JWT list req/s ÷ unauthenticated', auth.jwtPerOpen, '>=', 0.85),
          check(
            'auth phase errors + timeouts + non-2xx (sanity)',
            [auth.open, auth.openAfter, auth.apiKey, auth.jwt].reduce(
              (n, f) => n + f.errors + f.timeouts + f.non2xx,
              0,
            ),
            '=',
            0,
          ),
        ]
      : []),
    ...(webhooks
      ? [
          check('webhook deliveries/s ÷ raw POSTs/s', webhooks.ratio, '>=', 0.25),
          check(
            'webhook commit → first attempt p99',
            webhooks.latency.fromOccurredAt.p99Ms,
            '<=',
            100,
            ' ms',
          ),
          check('webhook duplicate deliveries (sanity)', webhooks.duplicates, '=', 0),
        ]
      : []),
    ...(cv
      ? [
          ...cv.overhead.map(({ model, ratio }) =>
            check(`cv ${model} jobs/s ÷ plain loop`, ratio, '>=', 0.7),
          ),
          check(
            'CV jobs failed (sanity)',
            cv.throughput.reduce((n, t) => n + t.failed + (t.jobs - t.completed - t.failed), 0),
            '=',
            0,
          ),
        ]
      : []),
    ...(rebuild
      ? [
          check('rebuild ÷ raw read', rebuild.ratio, '>=', targets.rebuild),
          check(
            `rebuild peak RSS over ${rebuild.events.toLocaleString('en-US')} events`,
            rebuild.peakRssMb,
            '<',
            300,
            ' MB',
          ),
          check('audit verify ÷ raw read of the tenant', rebuild.audit.ratio, '>=', 0.5),
          check(
            `audit verify peak RSS over ${rebuild.audit.streams.toLocaleString('en-US')} streams`,
            rebuild.audit.peakRssMb,
            '<',
            300,
            ' MB',
          ),
          check('audit verify broken links (sanity)', rebuild.audit.intact ? 0 : 1, '=', 0),
        ]
      : []),
  ];
};

export const summary = (
  { http, scaleout, append, catchUp, million, growth, auth, webhooks, cv, rebuild }: Parts,
  checks: readonly Check[],
): string => {
  const text: string[][] = [['figure', 'value']];
  const row = (name: string, value: string) => text.push([name, value]);
  const f0 = (n: number) => Math.round(n).toLocaleString('en-US');
  if (http) {
    row(
      'HTTP load as',
      http.authenticated ? `API key of tenant ${http.tenantId}` : `open tenant ${http.tenantId}`,
    );
    for (const [name, f, peer] of [
      ['POST /echo (ceiling)', http.echo, null],
      ['CRUD peer POST', http.peerCreate, null],
      ['CRUD peer GET ?limit=50', http.peerList, null],
      ['POST observations', http.create, http.peerCreate],
      ['GET observations', http.list, http.peerList],
    ] as const) {
      const ratios = peer
        ? ` (${(f.requestsPerSecond / peer.requestsPerSecond).toFixed(2)} of peer, ` +
          `${(f.requestsPerSecond / http.echo.requestsPerSecond).toFixed(2)} of echo)`
        : '';
      row(
        name,
        `${f0(f.requestsPerSecond)} req/s${ratios}${f.cpuMsPerRequest ? `  CPU ${f.cpuMsPerRequest.toFixed(3)} ms/req` : ''}  ` +
          `p50 ${f.p50Ms.toFixed(1)} ms  p99 ${f.p99Ms.toFixed(1)} ms  max ${f.maxMs.toFixed(0)} ms  ` +
          `errors ${f.errors}  timeouts ${f.timeouts}  non-2xx ${f.non2xx}`,
      );
    }
  }
  const ms = (n: number) => `${n.toFixed(1)} ms`;
  if (scaleout) {
    for (const [name, f] of [
      ['scale-out create, 1 API', scaleout.one.create],
      ['scale-out create, 2 API', scaleout.two.create],
      ['scale-out list, 1 API', scaleout.one.list],
      ['scale-out list, 2 API', scaleout.two.list],
    ] as const) {
      row(
        name,
        `${f0(f.requestsPerSecond)} req/s (${f.perProcess.map(f0).join(' + ')})  p50 ${ms(f.p50Ms)}  p99 ${ms(f.p99Ms)}  ` +
          `errors ${f.errors}  timeouts ${f.timeouts}  non-2xx ${f.non2xx}`,
      );
    }
    const r = scaleout.readYourWrites;
    row(
      'read-your-writes A→B, B→A',
      `${r.checks} checks  violations ${r.violations}  503 ${r.unavailable}  other ${r.otherFailures}  ` +
        `list p50 ${ms(r.listLatency.p50Ms)}  p99 ${ms(r.listLatency.p99Ms)}`,
    );
  }
  if (append) {
    row('append 1/call', `${f0(append.unbatchedEventsPerSecond)} events/s`);
    row(
      `append ${append.batchSize}/call`,
      `${f0(append.batchedEventsPerSecond)} events/s  (× ${(append.batchedEventsPerSecond / append.unbatchedEventsPerSecond).toFixed(1)})`,
    );
  }
  if (catchUp) {
    row(`seed ${f0(catchUp.events)}`, `${catchUp.seedSeconds.toFixed(1)} s`);
    row(
      'raw readAll',
      `${f0(catchUp.rawReadEventsPerSecond)} events/s  (filtered ${f0(catchUp.rawReadFilteredEventsPerSecond)})`,
    );
    row('projection catch-up', `${f0(catchUp.projectionEventsPerSecond)} events/s`);
  }
  if (million) {
    row(
      `seed ${f0(million.events)}`,
      `${million.seedSeconds.toFixed(1)} s  (${f0(million.seedEventsPerSecond)} events/s)`,
    );
    row(
      `catch-up ${f0(million.events)}`,
      `${f0(million.catchUpEventsPerSecond)} events/s  ${million.catchUpSeconds.toFixed(1)} s`,
    );
    row(
      'catch-up RSS',
      `peak ${million.peakRssMb.toFixed(0)} MB  (sampled ${million.peakRssSampledMb.toFixed(0)} by ${million.samples} timer samples, ` +
        `maxRSS ${million.maxRssMb.toFixed(0)}, /proc ${million.parentSampledRssMb?.toFixed(0) ?? 'n/a'}, start ${million.startRssMb.toFixed(0)})`,
    );
  }
  if (growth) {
    for (const size of growth.sizes) {
      const n = f0(size.observations);
      row(
        `growth ${n}: seed, catch-up`,
        `${size.seedSeconds.toFixed(1)} s, ${size.catchUpSeconds.toFixed(1)} s (${f0(size.events)} events)`,
      );
      for (const list of size.lists)
        row(
          `growth ${n}: ${list.name}`,
          `${f0(list.requestsPerSecond)} req/s  p50 ${ms(list.p50Ms)}  p99 ${list.lowerBound ? '> ' : ''}${ms(list.p99Ms)}  ` +
            `completed ${list.completed}  failures ${list.failures}`,
        );
    }
    for (const [name, f] of [
      ['growth create, empty store', growth.createEmpty],
      [`growth create, ${f0(growth.createFullStoreEvents)} events`, growth.createFull],
    ] as const)
      row(name, `${f0(f.requestsPerSecond)} req/s  p50 ${ms(f.p50Ms)}  p99 ${ms(f.p99Ms)}`);
  }
  if (auth) {
    for (const [name, f, ratio] of [
      ['list, no auth (before)', auth.open, null],
      ['list, no auth (after)', auth.openAfter, null],
      ['list, API key', auth.apiKey, auth.apiKeyPerOpen],
      ['list, JWT', auth.jwt, auth.jwtPerOpen],
    ] as const) {
      row(
        name,
        `${f0(f.requestsPerSecond)} req/s${ratio === null ? '' : ` (${ratio.toFixed(2)} of no auth)`}  ` +
          `p50 ${ms(f.p50Ms)}  p99 ${ms(f.p99Ms)}  errors ${f.errors}  timeouts ${f.timeouts}  non-2xx ${f.non2xx}`,
      );
    }
  }
  if (webhooks) {
    row(`raw POSTs ×${webhooks.concurrency}`, `${f0(webhooks.rawPostsPerSecond)} POSTs/s`);
    row(
      `webhook deliveries ${f0(webhooks.deliveries)}`,
      `${f0(webhooks.serviceDeliveriesPerSecond)} deliveries/s  ${webhooks.serviceSeconds.toFixed(1)} s  ` +
        `duplicates ${webhooks.duplicates}`,
    );
    const { fromOccurredAt: o, fromResponse: r } = webhooks.latency;
    row('webhook occurredAt → arrival', `p50 ${ms(o.p50Ms)}  p99 ${ms(o.p99Ms)}  max ${ms(o.maxMs)}`);
    row('webhook 201 → arrival', `p50 ${ms(r.p50Ms)}  p99 ${ms(r.p99Ms)}  min ${ms(r.minMs)}`);
  }
  if (cv) {
    for (const t of cv.throughput) {
      row(
        `cv ${t.model}`,
        `${t.jobsPerSecond.toFixed(1)} jobs/s  ${t.seconds.toFixed(1)} s  run ${ms(t.meanRunMs)}  failed ${t.failed}`,
      );
    }
    for (const l of cv.loop)
      row(
        `cv ${l.model}, plain loop`,
        `${l.runsPerSecond.toFixed(1)} runs/s  (${l.runs} in ${l.seconds.toFixed(1)} s)`,
      );
    const l = cv.startLatency;
    row('cv requested → started', `p50 ${ms(l.p50Ms)}  p99 ${ms(l.p99Ms)}  max ${ms(l.maxMs)}`);
  }
  if (rebuild) {
    row(`rebuild seed ${f0(rebuild.events)}`, `${rebuild.seedSeconds.toFixed(1)} s`);
    row('rebuild raw read', `${f0(rebuild.rawReadEventsPerSecond)} events/s`);
    row(
      'rebuild',
      `${f0(rebuild.rebuildEventsPerSecond)} events/s  ${rebuild.rebuildSeconds.toFixed(1)} s  ` +
        `peak RSS ${rebuild.peakRssMb.toFixed(0)} MB`,
    );
    const a = rebuild.audit;
    row(
      'audit verify',
      `${f0(a.verifyEventsPerSecond)} events/s  ${a.verifySeconds.toFixed(1)} s  (raw ${f0(a.rawReadEventsPerSecond)})  ` +
        `peak RSS ${a.peakRssMb.toFixed(0)} MB  ${a.intact ? 'intact' : 'BROKEN'}`,
    );
  }
  text.push(['', '']);
  for (const c of checks) {
    text.push([
      c.name,
      `${c.value.toFixed(c.unit ? 1 : 2)}${c.unit}  target ${c.op} ${c.target}${c.unit}  ${c.pass ? 'PASS' : 'MISS'}`,
    ]);
  }
  return renderText(text);
};
