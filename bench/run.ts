import { rebuildPhase, type RebuildPhaseResults } from './audit.js';
import { runAuth, type AuthResults } from './auth.js';
import { reportCli, runCli } from './cli.js';
import { runCv, type CvResults } from './cv.js';
import { reportCvDetector, runCvDetector } from './cv-detector.js';
import { runEmmett, type EmmettResults } from './emmett.js';
import { emmettChecks, emmettText, writeEmmettReports } from './emmett-report.js';
import { runHttp, type HttpResults } from './http.js';
import { reportImages, runImages } from './images.js';
import { millionCatchUp, type MillionResults } from './million.js';
import { postgresAppend, postgresCatchUp } from './postgres.js';
import { benchBackends, createBenchDatabase } from './postgres-db.js';
import { postgresChecks, postgresSummary, type PostgresResults } from './postgres-report.js';
import { cleanupSync } from './processes.js';
import { loadAverage, machine, source, writeReports, type Results } from './report.js';
import { plansText, runGrowth, type GrowthResults } from './growth.js';
import { runScaleout, type ScaleoutResults } from './scaleout.js';
import { runSoak, type SoakResults } from './soak.js';
import { soakText, writeSoakReports } from './soak-report.js';
import { summary, targetChecks } from './summary.js';
import { appendThroughput, catchUpSpeed, type AppendResults, type CatchUpResults } from './store.js';
import { runVerifyHistory, verifyHistoryChecks } from './verify-history.js';
import { runWebhooks, type WebhookResults } from './webhooks.js';

/**
 * `npm run bench`: every phase in one run, each against its own baseline, then the ratios against their
 * targets. Settings come from the environment (see docs/benchmarks.md); BENCH_PHASES=http,emmett,scaleout,append,
 * catchup,million,growth,auth,webhooks,cv,cv-detector,images,cli,verify,rebuild,soak (all by default), or the same names
 * as arguments (`npm run bench -- soak`), runs a subset, and only a full run rewrites docs/bench/latest.json
 * and docs/benchmarks.md. `cv-detector` and `images` write their own JSON under docs/bench and print. The endurance phase (`soak`) writes its own docs/bench/soak.json and its part of
 * docs/benchmarks.md when it ran for its full length (see bench/soak-report.ts).
 * BENCH_BACKENDS=sqlite,postgres (bench/postgres-db.ts; both by default when a PostgreSQL server answers)
 * says where the http, scaleout, append, catchup, webhooks and rebuild phases run: each runs on PostgreSQL
 * right after SQLite, in a database of its own that it drops. `emmett` (the service against an emmett peer,
 * bench/emmett.ts) runs on PostgreSQL alone, and is skipped with a note without it. The other phases run on
 * SQLite alone.
 */

const numberFromEnv = (name: string, fallback: number): number => {
  const raw = process.env[name];
  if (raw === undefined || raw === '') return fallback;
  const value = Number(raw);
  if (!Number.isFinite(value) || value < 0) throw new Error(`${name}=${raw} is not a non-negative number`);
  return value;
};

const settings = {
  durationS: numberFromEnv('BENCH_DURATION', 10),
  warmupS: numberFromEnv('BENCH_WARMUP', 2),
  appendEvents: numberFromEnv('BENCH_APPENDS', 5000),
  appendBatch: numberFromEnv('BENCH_APPEND_BATCH', 100),
  catchUpEvents: numberFromEnv('BENCH_CATCHUP_EVENTS', 200_000),
  millionEvents: numberFromEnv('BENCH_MILLION', 1_000_000),
  eventsPerStream: numberFromEnv('BENCH_PER_STREAM', 2),
  timeoutMin: numberFromEnv('BENCH_TIMEOUT_MIN', 90),
  authObservations: numberFromEnv('BENCH_AUTH_OBSERVATIONS', 5000),
  webhookDeliveries: numberFromEnv('BENCH_WEBHOOKS', 3000),
  webhookLatencySamples: numberFromEnv('BENCH_WEBHOOK_SAMPLES', 200),
  cvJobs: numberFromEnv('BENCH_CV_JOBS', 300),
  cvLatencySamples: numberFromEnv('BENCH_CV_SAMPLES', 100),
  cvLoopRuns: numberFromEnv('BENCH_CV_LOOP', 100),
  scaleoutChecks: numberFromEnv('BENCH_SCALEOUT_CHECKS', 400),
  soakS: numberFromEnv('BENCH_SOAK_S', 600),
  soakRate: numberFromEnv('BENCH_SOAK_RATE', 40),
  soakTenants: numberFromEnv('BENCH_SOAK_TENANTS', 4),
  soakDrainS: numberFromEnv('BENCH_SOAK_DRAIN_S', 60),
  emmettRounds: numberFromEnv('BENCH_EMMETT_ROUNDS', 3),
};
/** BENCH_GROWTH_SIZES: the observation counts of the `growth` phase, smallest first. */
const growthSizes = (process.env.BENCH_GROWTH_SIZES || '10000,100000,1000000').split(',').map((raw) => {
  const size = Number(raw.trim());
  if (!Number.isInteger(size) || size < 1) throw new Error(`BENCH_GROWTH_SIZES: ${raw} is not a count`);
  return size;
});
const allPhases = [
  'http',
  'emmett',
  'scaleout',
  'append',
  'catchup',
  'million',
  'growth',
  'auth',
  'webhooks',
  'cv',
  'cv-detector',
  'images',
  'cli',
  'verify',
  'rebuild',
  'soak',
] as const;
const requested = process.argv.slice(2).join(',') || process.env.BENCH_PHASES || allPhases.join(',');
const phases = new Set(requested.split(',').map((p) => p.trim()));
for (const name of phases)
  if (!(allPhases as readonly string[]).includes(name))
    throw new Error(`unknown bench phase ${name}: choose from ${allPhases.join(', ')}`);

const log = (message: string) => console.log(`[bench ${new Date().toISOString().slice(11, 19)}] ${message}`);

const phase = async <T>(name: (typeof allPhases)[number], run: () => Promise<T>): Promise<T | null> => {
  if (!phases.has(name)) return null;
  log(`${name}…`);
  const started = performance.now();
  const result = await run();
  log(`${name} done in ${((performance.now() - started) / 1000).toFixed(1)} s`);
  return result;
};

/** The phases that run on each backend of BENCH_BACKENDS. */
const dualPhases = ['http', 'scaleout', 'append', 'catchup', 'webhooks', 'rebuild'] as const;
type Dual = (typeof dualPhases)[number];

const main = async (): Promise<void> => {
  const started = performance.now();
  const loadBefore = loadAverage();
  const measured = source();
  const backends =
    dualPhases.some((name) => phases.has(name)) || phases.has('emmett') ? benchBackends(log) : [];
  const onSqlite = backends.includes('sqlite');
  const onPostgres = backends.includes('postgres');
  if (backends.length > 0) log(`backends of the shared phases: ${backends.join(', ')}`);
  /** A phase that runs on both backends: its SQLite run, when SQLite is one of them. */
  const sqlitePhase = <T>(name: Dual, run: () => Promise<T>): Promise<T | null> =>
    onSqlite ? phase(name, run) : Promise.resolve(null);
  /**
   * Its PostgreSQL run, given a fresh database that is dropped after it; `append` and `catchup` make their
   * own, one per measurement (bench/postgres.ts), and get none.
   */
  const postgresPhase = async <T>(
    name: Dual,
    run: (databaseUrl: string | null) => Promise<T>,
  ): Promise<T | null> => {
    if (!onPostgres || !phases.has(name)) return null;
    log(`${name} (postgres)…`);
    const phaseStarted = performance.now();
    const database = name === 'append' || name === 'catchup' ? null : createBenchDatabase(name);
    try {
      return await run(database?.url ?? null);
    } finally {
      database?.drop();
      log(`${name} (postgres) done in ${((performance.now() - phaseStarted) / 1000).toFixed(1)} s`);
    }
  };
  /** The database of a phase that gets one. */
  const url = (databaseUrl: string | null): string => {
    if (databaseUrl === null) throw new Error('this phase was given no database');
    return databaseUrl;
  };
  const pg: PostgresResults = {
    http: null,
    scaleout: null,
    append: null,
    catchUp: null,
    webhooks: null,
    rebuild: null,
  };

  const http: HttpResults | null = await sqlitePhase('http', () => runHttp(settings));
  pg.http = await postgresPhase('http', (databaseUrl) =>
    runHttp({ ...settings, databaseUrl: url(databaseUrl), ...(http ? { baselines: http } : {}) }),
  );
  const loadBeforeEmmett = loadAverage();
  if (phases.has('emmett') && !onPostgres)
    log('emmett: skipped, it runs on PostgreSQL alone (BENCH_BACKENDS)');
  const emmett: EmmettResults | null = onPostgres
    ? await phase('emmett', () =>
        runEmmett({
          durationS: settings.durationS,
          warmupS: settings.warmupS,
          rounds: settings.emmettRounds,
          log,
        }),
      )
    : null;
  if (emmett) {
    console.log(`\n${emmettText(emmett)}\n`);
    for (const file of await writeEmmettReports(emmett, machine(loadBeforeEmmett), measured))
      log(`wrote ${file}`);
  }
  const scaleoutSettings = {
    durationS: settings.durationS,
    warmupS: settings.warmupS,
    checks: settings.scaleoutChecks,
  };
  const scaleout: ScaleoutResults | null = await sqlitePhase('scaleout', () => runScaleout(scaleoutSettings));
  pg.scaleout = await postgresPhase('scaleout', (databaseUrl) =>
    runScaleout({ ...scaleoutSettings, databaseUrl: url(databaseUrl) }),
  );
  const append: AppendResults | null = await sqlitePhase('append', () =>
    appendThroughput(settings.appendEvents, settings.appendBatch),
  );
  pg.append = await postgresPhase('append', () =>
    postgresAppend(settings.appendEvents, settings.appendBatch),
  );
  const catchUp: CatchUpResults | null = await sqlitePhase('catchup', () =>
    catchUpSpeed(settings.catchUpEvents, settings.eventsPerStream),
  );
  pg.catchUp = await postgresPhase('catchup', () =>
    postgresCatchUp(settings.catchUpEvents, settings.eventsPerStream),
  );
  const million: MillionResults | null = await phase('million', () =>
    millionCatchUp(settings.millionEvents, settings.eventsPerStream),
  );
  const growth: GrowthResults | null = await phase('growth', () =>
    runGrowth({ sizes: growthSizes, durationS: settings.durationS, warmupS: settings.warmupS }),
  );
  if (growth) console.log(`\n${plansText(growth)}\n`);

  const auth: AuthResults | null = await phase('auth', () =>
    runAuth({
      durationS: settings.durationS,
      warmupS: settings.warmupS,
      observations: settings.authObservations,
    }),
  );
  const webhookSettings = (measuredHttp: HttpResults | null) => ({
    deliveries: settings.webhookDeliveries,
    samples: settings.webhookLatencySamples,
    // Commit → first attempt is measured under creates at half the maximum the http phase measured.
    createsPerSecondUnderLatency: measuredHttp
      ? measuredHttp.create.requestsPerSecond / 2
      : numberFromEnv('BENCH_WEBHOOK_LOAD', 0),
  });
  const webhooks: WebhookResults | null = await sqlitePhase('webhooks', () =>
    runWebhooks(webhookSettings(http)),
  );
  pg.webhooks = await postgresPhase('webhooks', (databaseUrl) =>
    runWebhooks({ ...webhookSettings(pg.http), databaseUrl: url(databaseUrl) }),
  );
  const cv: CvResults | null = await phase('cv', () =>
    runCv({ jobs: settings.cvJobs, samples: settings.cvLatencySamples, loopRuns: settings.cvLoopRuns }),
  );
  const detector = await phase('cv-detector', () =>
    runCvDetector({ jobs: numberFromEnv('BENCH_CV_DETECTOR_JOBS', 100) }),
  );
  if (detector) for (const file of reportCvDetector(detector)) log(`wrote ${file}`);
  const images = await phase('images', () => runImages({ durationS: numberFromEnv('BENCH_IMAGES_S', 20) }));
  if (images) for (const file of reportImages(images)) log(`wrote ${file}`);
  const cli = await phase('cli', () =>
    Promise.resolve(runCli({ runs: numberFromEnv('BENCH_CLI_RUNS', 10) })),
  );
  if (cli) reportCli(cli);
  const verify = await phase('verify', () => runVerifyHistory({ events: settings.millionEvents, log }));
  const rebuild: RebuildPhaseResults | null = await sqlitePhase('rebuild', () =>
    rebuildPhase(settings.millionEvents, settings.eventsPerStream),
  );
  pg.rebuild = await postgresPhase('rebuild', (databaseUrl) =>
    rebuildPhase(settings.millionEvents, settings.eventsPerStream, url(databaseUrl)),
  );

  const loadBeforeSoak = loadAverage();
  const soak: SoakResults | null = await phase('soak', () =>
    runSoak({
      durationS: settings.soakS,
      rate: settings.soakRate,
      tenants: settings.soakTenants,
      sampleS: 10,
      drainS: settings.soakDrainS,
    }),
  );
  if (soak) {
    console.log(`\n${soakText(soak)}\n`);
    const report = { ...soak, machine: machine(loadBeforeSoak), source: measured };
    for (const file of await writeSoakReports(report)) log(`wrote ${file}`);
  }

  const parts = { http, scaleout, append, catchUp, million, growth, auth, webhooks, cv, rebuild };
  const checks = [
    ...targetChecks(parts),
    ...(onPostgres ? postgresChecks(pg) : []),
    ...(emmett ? emmettChecks(emmett) : []),
    ...(verify ? verifyHistoryChecks(verify) : []),
    ...(soak?.checks ?? []),
  ];
  if (Object.values(pg).some((result) => result !== null)) console.log(`\n${postgresSummary(pg)}`);
  console.log(`\n${summary(parts, checks)}\n`);

  const totalSeconds = (performance.now() - started) / 1000;
  if (
    http &&
    scaleout &&
    append &&
    catchUp &&
    million &&
    growth &&
    auth &&
    webhooks &&
    cv &&
    rebuild &&
    process.env.BENCH_WRITE !== '0'
  ) {
    const results: Results = {
      machine: machine(loadBefore),
      source: measured,
      settings,
      http: {
        ...http,
        createPerEcho: http.create.requestsPerSecond / http.echo.requestsPerSecond,
        listPerEcho: http.list.requestsPerSecond / http.echo.requestsPerSecond,
        createPerPeer: http.create.requestsPerSecond / http.peerCreate.requestsPerSecond,
        listPerPeer: http.list.requestsPerSecond / http.peerList.requestsPerSecond,
      },
      append: {
        ...append,
        batchedPerUnbatched: append.batchedEventsPerSecond / append.unbatchedEventsPerSecond,
      },
      catchUp: {
        ...catchUp,
        projectionPerRawRead: catchUp.projectionEventsPerSecond / catchUp.rawReadEventsPerSecond,
      },
      scaleout,
      million,
      growth,
      auth,
      webhooks,
      cv,
      rebuild,
      postgres: onPostgres ? pg : null,
      emmett,
      checks,
      totalSeconds,
    };
    for (const file of await writeReports(results)) log(`wrote ${file}`);
  } else {
    log(
      'partial run: docs/bench/latest.json and the results section of docs/benchmarks.md left as they were',
    );
  }
  log(
    `${checks.filter((c) => c.pass).length} of ${checks.length} targets met in ${totalSeconds.toFixed(0)} s`,
  );
};

const watchdog = setTimeout(() => {
  console.error(`bench: still running after ${settings.timeoutMin} min; giving up`);
  process.exit(1); // the exit handler kills the children and removes the temp dirs
}, settings.timeoutMin * 60_000);
watchdog.unref();
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => {
    cleanupSync();
    process.exit(130);
  });
}

main().then(
  () => process.exit(0),
  (error: unknown) => {
    console.error(error);
    process.exit(1);
  },
);
