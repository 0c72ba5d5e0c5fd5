import { watch, type FSWatcher } from 'node:fs';
import { basename, dirname } from 'node:path';
import type Koa from 'koa';
import type { Logger } from 'pino';
import { projections } from '../projections/index.js';
import { digestJob } from './audit/digest.js';
import { deliveriesProjection } from '../projections/webhooks.js';
import { outboxMailer, smtpMailer } from './mail/mailer.js';
import { webhookSender } from './webhooks/sender.js';
import { webhookWorker } from './webhooks/worker.js';
import { cvJobsProjection, pendingCvJobsProjection } from '../projections/cv-jobs.js';
import { modelRegistry } from './cv/models/registry.js';
import { cvWorker, defaultCvWorkerSettings, type CvWorker } from './cv/worker.js';
import { createApp } from './app.js';
import { authenticator, type Authenticator } from './auth/authenticate.js';
import { failureLimiter } from './auth/rate-limit.js';
import { revocations } from './auth/revocations.js';
import { loadKeyring, type Keyring } from './auth/signing-keys.js';
import type { Config } from './config.js';
import { newId, systemClock, type Clock } from './core/ids.js';
import { cursorCodec } from './http/cursor.js';
import { projectionRunner, type ProjectionRunner } from './readmodels/runner.js';
import { developmentSecret } from './secrets.js';
import { openStores, type Stores } from './stores.js';

export interface Service {
  app: Koa;
  stores: Stores;
  runners: ProjectionRunner[];
  platformAdminKey: string;
  cvWorker: CvWorker;
  stop: () => Promise<void>;
}

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

export interface ServiceOptions {
  clock?: Clock;
  /**
   * Test and benchmark seam, never set by main.ts: replaces the authenticator the routes use.
   * bench/open-service.ts passes one that answers a fixed principal without looking at credentials, to
   * measure the cost of authentication against the same routes without it.
   */
  authenticator?: Authenticator;
}

/** Wires stores, projections, authentication and HTTP from the configuration; main.ts only listens. */
export const startService = async (
  config: Config,
  logger: Logger,
  { clock = systemClock, authenticator: authenticatorOverride }: ServiceOptions = {},
): Promise<Service> => {
  const stores = await openStores(config);
  // Every read model the service keeps: the registry in projections/index.ts, which the CLI rebuilds too.
  const runners = projections.map(({ projection }) => projectionRunner(projection, { ...stores, logger }));
  await Promise.all(runners.map((runner) => runner.start()));
  const revoked = revocations(stores.eventStore, logger);
  await revoked.start();
  const keyring = liveKeyring(config.signingKeysFile, !config.signingKeysExplicit, logger);
  // Printed once, when it is generated; it stays in DATA_DIR/secrets.json.
  const platformAdminKey =
    config.platformAdminKey ??
    developmentSecret(config.dataDir, 'platformAdminKey', (key) =>
      logger.warn(`PLATFORM_ADMIN_KEY is not set: generated a development platform admin key: ${key}`),
    );
  const tokens = {
    issuer: config.publicUrl,
    audience: config.tokenAudience,
    accessTokenTtlSeconds: config.accessTokenTtlSeconds,
  };
  const byName = (name: string) => runners.find((runner) => runner.name === name)!;
  const mailer = config.smtpUrl
    ? smtpMailer(config.smtpUrl, config.mailFrom)
    : outboxMailer(config.dataDir, config.mailFrom, logger);
  const sender = webhookSender(config.webhooks);
  const webhookSecretKey = config.webhooks.secretKey ?? developmentSecret(config.dataDir, 'webhookSecretKey');
  const worker = webhookWorker({
    eventStore: stores.eventStore,
    readModels: stores.readModels,
    sender,
    mailer,
    secretKey: webhookSecretKey,
    clock,
    logger,
    deliveriesCollection: deliveriesProjection.collection.name,
    settings: {
      retryDelaysMs: config.webhooks.retryDelaysMs,
      timeoutMs: config.webhooks.timeoutMs,
      claimTimeoutMs: config.webhooks.timeoutMs + 10_000,
      concurrency: config.webhooks.concurrency,
      perSubscription: config.webhooks.perSubscription,
    },
  });
  await worker.start();
  const digests = digestJob({ ...stores, logger, schedule: config.auditDigestSchedule });
  digests.start();
  const cvModels = modelRegistry(config.cv.remoteModels);
  const cv = cvWorker({
    eventStore: stores.eventStore,
    readModels: stores.readModels,
    blobs: stores.blobs,
    models: cvModels,
    clock,
    logger,
    pendingCollection: pendingCvJobsProjection.collection.name,
    settings: {
      ...defaultCvWorkerSettings,
      jobTimeoutMs: config.cv.jobTimeoutMs,
      concurrency: config.cv.concurrency,
    },
  });
  await cv.start();
  const ids = (prefix: string) => newId(prefix, clock());

  const app = createApp({
    ...stores,
    logger,
    clock,
    ids,
    bodyLimit: config.bodyLimit,
    mediaMaxBytes: config.mediaMaxBytes,
    consistencyTimeoutMs: config.consistencyTimeoutMs,
    http: {
      idempotencyTtlMs: config.http.idempotencyTtlMs,
      rateLimit: config.http.rateLimit,
      corsOrigins: config.http.corsOrigins,
      https: config.publicUrl.startsWith('https://'),
    },
    cursors: cursorCodec(config.cursorSecret ?? developmentSecret(config.dataDir, 'cursorSecret')),
    projections: {
      observations: byName('observations'),
      users: byName('users'),
      locations: byName('locations'),
      visits: byName('visits'),
    },
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
    worker,
    cv: { models: cvModels, projection: byName(cvJobsProjection.name) },
    webhooks: { ...config.webhooks, secretKey: webhookSecretKey },
    failures: {
      byEmail: failureLimiter({ max: 5, windowMs: 15 * 60_000 }),
      byAddress: failureLimiter({ max: 20, windowMs: 15 * 60_000 }),
    },
  });

  return {
    app,
    stores,
    runners,
    platformAdminKey,
    cvWorker: cv,
    stop: async () => {
      await cv.stop();
      await digests.stop();
      await worker.stop();
      await sender.close();
      mailer.close();
      keyring.close();
      await revoked.stop();
      await Promise.all(runners.map((runner) => runner.stop()));
      await stores.close();
    },
  };
};
