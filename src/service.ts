import { watch, type FSWatcher } from 'node:fs';
import { basename, dirname } from 'node:path';
import type Koa from 'koa';
import type { Logger } from 'pino';
import { cvFeature } from './cv/feature.js';
import type { Feature, FeatureConsumer } from './feature.js';
import { eventSchemas, projections } from './domains.js';
import { features } from './features.js';
import { digestJob } from './audit/digest.js';
import type { CvWorker } from './cv/worker.js';
import { decodeQueue, type DecodeQueue } from './media/decode-queue.js';
import { createApp } from './app.js';
import { authenticator } from './auth/authenticate.js';
import type { Authenticator } from './http/guard.js';
import { openFailureStore } from './auth/failure-store.js';
import { clientLimits, loginLimits } from './auth/rate-limit.js';
import { revocations } from './auth/revocations.js';
import { loadKeyring, type Keyring } from './auth/signing-keys.js';
import type { Config } from './config.js';
import { newId, systemClock, type Clock } from './core/ids.js';
import { cursorCodec } from './http/cursor.js';
import { projectionHandles, type ProjectionHandles } from './readmodels/handles.js';
import { projectionRunner, type ProjectionRunner } from './readmodels/runner.js';
import {
  checkFingerprints,
  fingerprintsOf,
  recorder,
  sharedValues,
  type SharedValues,
} from './fingerprints/check.js';
import { agreedFingerprints } from './fingerprints/agreed.js';
import { issuerRenewal, type IssuerRenewal } from './fingerprints/issuer.js';
import { openFingerprintStore } from './fingerprints/store.js';
import { openStores, type Stores } from './stores.js';
import { directoryWriteProbe, readiness, readinessAnswer, storeFailures } from './http/health.js';
import type { ConsumerStatus } from './core/supervisor.js';
import type { EventStore } from './eventstore/port.js';
import { workerDuties, type Duty } from './duties.js';
import { startTracing } from './observability/tracing.js';
import { createMetrics, type Metrics } from './observability/metrics.js';
import { instrumentEventStore } from './observability/metrics-eventstore.js';
import { serviceProbes } from './observability/metrics-service.js';
import { startMetricsListener, type MetricsListener } from './observability/metrics-http.js';

export interface Service {
  app: Koa;
  stores: Stores;
  runners: ProjectionRunner[];
  /** The same runners by their projection's definition: `projections.of(observationsProjection).runner`. */
  projections: ProjectionHandles;
  platformAdminKey: string;
  cvWorker: CvWorker;
  /** The image decode queue uploads and CV jobs share (MEDIA_DECODE_CONCURRENCY, MEDIA_DECODE_QUEUE). */
  decodes: DecodeQueue;
  /** The state of every consumer this process runs (none in ROLE=api; one `standby` entry while standing by). */
  consumers: () => ConsumerStatus[];
  /**
   * The start of a shutdown: readiness answers 503, and no webhook attempt or CV run starts any more; those
   * in flight get `deadlineMs`, then are cut and left for a retry. Projections go on: requests in flight may
   * wait for them.
   */
  beginDrain: (options?: { deadlineMs?: number }) => void;
  draining: () => boolean;
  /** This service's Prometheus registry and instruments (docs/operations.md#metrics). */
  metrics: Metrics;
  /** The port of the METRICS=port listener; null in the other modes. */
  metricsPort: number | null;
  /** Drains (unless begun), then stops every consumer and closes the stores. */
  stop: (options?: { deadlineMs?: number }) => Promise<void>;
}

/** A projection runner as a worker duty. */
const runnerDuty = (runner: ProjectionRunner): Duty => ({
  start: () => runner.start(),
  stop: () => runner.stop(),
  consumers: () => [runner.status()],
});

/**
 * Follows the signing-key file: after `keys rotate` or `keys retire`, the running service signs and
 * verifies with the new keyring without a restart. A broken file keeps the previous keyring.
 */
const liveKeyring = (
  file: string,
  create: boolean,
  logger: Logger,
): { current: () => Keyring; close: () => void } => {
  let keyring = loadKeyring(file, { create });
  let watcher: FSWatcher | null = watch(dirname(file), (_event, name) => {
    if (name !== basename(file)) return;
    try {
      keyring = loadKeyring(file, { create: false });
      logger.info({ kid: keyring.signing.kid }, 'signing keyring reloaded');
    } catch (error) {
      logger.warn({ err: error }, 'signing keyring not reloaded');
    }
  });
  watcher.unref();
  return {
    current: () => keyring,
    close: () => {
      watcher?.close();
      watcher = null;
    },
  };
};

/**
 * Records this process's fingerprints on a new store, or compares them with the recorded ones: a ConfigError
 * (exit code 2) names each setting that differs. EventStoreDB alone shares no other store to keep them in.
 * A process that serves the API then keeps its PUBLIC_URL's record renewed (fingerprints/issuer.ts).
 */
const checkSharedValues = async (
  config: Config,
  shared: SharedValues,
  logger: Logger,
): Promise<IssuerRenewal | null> => {
  const store = await openFingerprintStore(config);
  if (!store) {
    logger.warn(
      'shared settings not compared with other processes: EventStoreDB alone keeps no fingerprints (docs/operations.md#shared-secrets)',
    );
    return null;
  }
  const by = recorder(config.dataDir);
  try {
    const mine = [
      ...fingerprintsOf(shared),
      ...agreedFingerprints(config, { servesApi: config.role !== 'worker' }),
    ];
    const outcome = await checkFingerprints(store, mine, by);
    logger.info(
      { store: store.kind, ...outcome },
      'shared settings agree with the other processes on the store',
    );
  } finally {
    await store.close();
  }
  if (!shared.issuer) return null;
  // A renewal that waits for another process's write lock on events.db blocks the requests meanwhile: it
  // waits briefly, and a renewal that could not is tried again at the next one.
  const renewals = (await openFingerprintStore(config, { busyTimeoutMs: 50 }))!;
  return issuerRenewal({ store: renewals, publicUrl: shared.issuer.value, by, logger });
};

export interface ServiceOptions {
  clock?: Clock;
  /**
   * Test and benchmark seam, never set by main.ts: replaces the authenticator the routes use.
   * bench/open-service.ts passes one that answers a fixed principal without looking at credentials, to
   * measure the cost of authentication against the same routes without it.
   */
  authenticator?: Authenticator;
  /**
   * Test seam, never set by main.ts: wraps the event store the service uses, so that a test can make a
   * real store fail as a full disk would (test/support/faults.ts).
   */
  wrapEventStore?: (store: EventStore) => EventStore;
}

/** Wires stores, projections, authentication and HTTP from the configuration; main.ts only listens. */
export const startService = async (
  config: Config,
  logger: Logger,
  { clock = systemClock, authenticator: authenticatorOverride, wrapEventStore }: ServiceOptions = {},
): Promise<Service> => {
  // First, so that everything started below is traced (only when OTEL_EXPORTER_OTLP_ENDPOINT is set).
  const tracing = await startTracing(config.otel, logger);
  const metrics = createMetrics();
  const opened = await openStores(config, {
    eventSchemas,
    onClaimRenewalFailed: (group, error) => {
      metrics.claimRenewalFailures.inc({ consumer: group });
      logger.warn({ group, err: error }, 'consumer group claims not renewed');
    },
  });
  // Before anything is served: this process's secrets and keyring must be those of every other process on
  // the store, or it would fail later one request (or one webhook delivery) at a time.
  const keyring = liveKeyring(config.signingKeysFile, !config.givenSettings.has('SIGNING_KEYS_FILE'), logger);
  const shared = sharedValues(config, keyring.current(), (key) =>
    // A field of its own: the line a person reads on a terminal (src/main.ts) sets it apart from the message.
    logger.warn(
      { platformAdminKey: key },
      'PLATFORM_ADMIN_KEY is not set: generated a development platform admin key (kept in DATA_DIR/secrets.json; send it as X-API-Key to create a tenant)',
    ),
  );
  let issuer: IssuerRenewal | null;
  try {
    issuer = await checkSharedValues(config, shared, logger);
  } catch (error) {
    keyring.close();
    await opened.close();
    throw error;
  }
  // Appends and consumer groups are measured at the port, in one place, whatever the adapter.
  const measured = instrumentEventStore(
    wrapEventStore ? wrapEventStore(opened.eventStore) : opened.eventStore,
    metrics,
  );
  const stores = { ...opened, eventStore: measured.eventStore };
  // Failed-authentication counters, shared with every process on the same DATA_DIR or MongoDB.
  const failureStore = await openFailureStore(config);
  // Every read model the service keeps: the features' (src/features.ts), which the CLI rebuilds too.
  const running = projections.map(({ projection }) => ({
    projection,
    runner: projectionRunner(projection, { ...stores, logger }),
  }));
  const runners = running.map(({ runner }) => runner);
  const handles = projectionHandles(running);
  // The lists read these collections in every role, also before (or without) a worker in this process. Where
  // this process may run the projections, their runners add the indexes: at once, or after a catch-up from
  // nothing over a long backlog, which is faster without them (src/readmodels/deferred-indexes.ts).
  for (const { projection } of projections)
    await stores.readModels.ensureCollection(projection.collection, undefined, {
      indexes: config.role === 'api',
    });
  const revoked = revocations(stores.eventStore, logger, {
    clock,
    accessTokenTtlSeconds: config.accessTokenTtlSeconds,
  });
  await revoked.start();
  const platformAdminKey = shared.platformAdminKey.value;
  const tokens = {
    issuer: config.publicUrl,
    audience: config.tokenAudience,
    accessTokenTtlSeconds: config.accessTokenTtlSeconds,
  };
  const decodes = decodeQueue(config.mediaDecode);
  // Each feature makes its consumer (the CV worker, the webhook worker) and the routes that use it.
  const wired = features.map((feature) => ({
    feature,
    ...feature.wire({
      config: { ...config, webhooks: { ...config.webhooks, secretKey: shared.webhookSecretKey.value } },
      stores,
      clock,
      logger,
      metrics,
      decodes,
    }),
  }));
  const featureConsumers = wired.flatMap(({ consumer }) => (consumer ? [consumer] : []));
  const consumerOf = <C extends FeatureConsumer | null>(feature: Feature<C>): C => {
    const found = wired.find((entry) => entry.feature === feature);
    if (!found) throw new Error(`The feature ${feature.name} is not in src/features.ts`);
    return found.consumer as C;
  };
  const digests = digestJob({
    ...stores,
    logger,
    schedule: config.auditDigestSchedule,
    signingKey: () => keyring.current().signing,
  });
  // The shutdown's deadline (beginDrain), shared by the webhook attempts and CV runs still in flight.
  let drainDeadline: number | null = null;
  let drained: Promise<unknown> | null = null;
  const untilDeadline = () =>
    drainDeadline === null ? {} : { deadlineMs: Math.max(0, drainDeadline - Date.now()) };
  // ROLE=api runs none of them; on the embedded store only one process of a DATA_DIR runs them at a time.
  const duties = workerDuties({
    eventStore: stores.eventStore,
    logger,
    leaseTtlMs: config.workerLeaseTtlMs,
    duties: [
      ...runners.map(runnerDuty),
      ...featureConsumers.map((consumer): Duty => ({
        start: () => consumer.start(),
        stop: () => consumer.stop(untilDeadline()),
        consumers: () => consumer.consumers(),
      })),
      { start: () => digests.start(), stop: () => digests.stop(), consumers: () => [] },
    ],
  });
  if (config.role !== 'api') await duties.start();
  // Every process follows the revocations; the worker duties' consumers are this process's only if it works.
  const consumers = () => [revoked.status(), ...(config.role === 'api' ? [] : duties.consumers())];
  const ids = (prefix: string) => newId(prefix, clock());
  metrics.observe({
    consumers,
    probes: () => [...serviceProbes(running, revoked), ...measured.probes()],
    eventStore: stores.eventStore,
    outboxDepth: () => Promise.resolve(null),
    cvJobs: () => Promise.resolve({ queued: 0, running: 0 }),
    // The features' own: the mail outbox (webhooks), the unfinished CV jobs (cv).
    ...featureConsumers.reduce<FeatureConsumer['metrics']>(
      (all, { metrics }) => ({ ...all, ...metrics }),
      {},
    ),
  });

  // Readiness, on the API's port (details for the platform key) and on the METRICS=port listener (details).
  const health = {
    consumers,
    unavailable: () => featureConsumers.flatMap((consumer) => consumer.unavailable?.() ?? []),
    draining: () => drained !== null,
    ...(issuer ? { issuer: () => issuer.check() } : {}),
    writeProbe: directoryWriteProbe(config.dataDir),
    storeFailures: storeFailures(),
    platformKey: platformAdminKey,
  };
  const app = createApp({
    ...stores,
    logger,
    clock,
    ids,
    bodyLimit: config.bodyLimit,
    mediaMaxBytes: config.mediaMaxBytes,
    features: wired,
    projections: handles,
    decodeLimits: config.mediaDecode,
    decodes,
    consistencyTimeoutMs: config.consistencyTimeoutMs,
    http: {
      idempotencyTtlMs: config.http.idempotencyTtlMs,
      idempotencyLeaseMs: config.http.idempotencyLeaseMs,
      rateLimit: config.http.rateLimit,
      corsOrigins: config.http.corsOrigins,
      trustProxy: config.http.trustProxy,
      https: config.publicUrl.startsWith('https://'),
    },
    console: config.console,
    cursors: cursorCodec(shared.cursorSecret.value),
    idempotencySecretKey: shared.idempotencySecretKey.value,
    auth:
      authenticatorOverride ??
      authenticator({
        eventStore: stores.eventStore,
        keyring: keyring.current,
        tokens,
        platformAdminKey,
        revocations: revoked,
        clock,
      }),
    keyring: keyring.current,
    tokens,
    refreshTokenTtlSeconds: config.refreshTokenTtlSeconds,
    revocations: revoked,
    failures: { logins: loginLimits(failureStore), clients: clientLimits(failureStore) },
    health,
    metrics: { instruments: metrics, mode: config.metrics.mode },
  });
  let metricsListener: MetricsListener | null = null;
  const beginDrain = ({ deadlineMs }: { deadlineMs?: number } = {}) => {
    if (drained) return;
    drainDeadline = deadlineMs === undefined ? null : Date.now() + deadlineMs;
    drained = Promise.all(featureConsumers.map((consumer) => consumer.stop(untilDeadline())));
  };

  const stop = async (options: { deadlineMs?: number } = {}) => {
    beginDrain(options);
    await metricsListener?.close();
    await drained;
    await duties.stop();
    await issuer?.stop();
    for (const consumer of featureConsumers) await consumer.close?.();
    keyring.close();
    await revoked.stop();
    await failureStore.close();
    await stores.close();
    // Last: flushes the spans of the shutdown too.
    await tracing.shutdown();
  };
  if (config.metrics.mode === 'port') {
    try {
      metricsListener = await startMetricsListener(
        { host: config.host, port: config.metrics.port },
        metrics,
        logger,
        { ready: async () => readinessAnswer(await readiness({ ...stores, logger, health }), true) },
      );
    } catch (error) {
      // METRICS_PORT taken: nothing may keep running (the lease, the keyring's watch) behind the error.
      await stop({ deadlineMs: 0 });
      throw error;
    }
  }

  return {
    app,
    stores,
    runners,
    projections: handles,
    platformAdminKey,
    cvWorker: consumerOf(cvFeature),
    decodes,
    consumers,
    beginDrain,
    draining: () => drained !== null,
    metrics,
    metricsPort: metricsListener?.port ?? null,
    stop,
  };
};
