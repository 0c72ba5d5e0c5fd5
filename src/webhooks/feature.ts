import { deliveriesProjection } from '../../projections/webhooks.js';
import { webhooksDomain } from './domain.js';
import type { Feature, FeatureConsumer } from '../feature.js';
import { outboxMailer, smtpMailer } from '../mail/mailer.js';
import { webhookMetrics } from './metrics.js';
import { developmentSecret } from '../core/development-secrets.js';
import { webhooksApi } from './api.js';
import { webhookEvents, webhookOperations, webhookSchemas } from './openapi.js';
import { webhookSender } from './sender.js';
import { webhookWorker } from './worker.js';

/** Webhook subscriptions, and the delivery of external events to them (src/webhooks/worker.ts). */
export const webhooksFeature: Feature<FeatureConsumer> = {
  ...webhooksDomain,
  openapi: { operations: webhookOperations, schemas: webhookSchemas, webhooks: webhookEvents },
  wire: ({ config, stores, clock, logger, metrics }) => {
    // Disabled subscriptions are told by e-mail: over SMTP, or into DATA_DIR/outbox without SMTP_URL.
    const mailer = config.smtpUrl
      ? smtpMailer(config.smtpUrl, config.mailFrom)
      : outboxMailer(config.dataDir, config.mailFrom, logger);
    const sender = webhookSender(config.webhooks);
    const secretKey = config.webhooks.secretKey ?? developmentSecret(config.dataDir, 'webhookSecretKey');
    const worker = webhookWorker({
      eventStore: stores.eventStore,
      readModels: stores.readModels,
      sender,
      mailer,
      secretKey,
      clock,
      logger,
      deliveriesCollection: deliveriesProjection.collection.name,
      observer: webhookMetrics(metrics),
      settings: {
        retryDelaysMs: config.webhooks.retryDelaysMs,
        timeoutMs: config.webhooks.timeoutMs,
        claimTimeoutMs: config.webhooks.timeoutMs + 10_000,
        concurrency: config.webhooks.concurrency,
        perSubscription: config.webhooks.perSubscription,
      },
    });
    return {
      consumer: {
        start: () => worker.start(),
        stop: (options) => worker.stop(options),
        consumers: () => worker.consumers(),
        close: async () => {
          await sender.close();
          mailer.close();
        },
        metrics: { outboxDepth: () => mailer.outboxDepth?.() ?? Promise.resolve(null) },
      },
      routes: (context) => [webhooksApi({ ...context, worker, webhooks: { ...config.webhooks, secretKey } })],
    };
  },
};
