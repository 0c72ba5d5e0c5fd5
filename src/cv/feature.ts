import { cvJobsProjection, pendingCvJobsProjection } from '../../projections/cv-jobs.js';
import { cvDomain } from './domain.js';
import type { Feature, FeatureConsumer } from '../feature.js';
import { pendingCvJobs } from '../observability/metrics-service.js';
import { cvMetrics } from './metrics.js';
import { cvApi } from './api.js';
import { modelRegistry } from './models/registry.js';
import { statusOf } from './models/port.js';
import { cvOperations, cvSchemas } from './openapi.js';
import { cvWorker, defaultCvWorkerSettings, type CvWorker } from './worker.js';

/** Computer-vision jobs: requested over HTTP, run by the CV worker over the observation's image. */
export const cvFeature: Feature<CvWorker & FeatureConsumer> = {
  ...cvDomain,
  openapi: { operations: cvOperations, schemas: cvSchemas },
  wire: ({ config, stores, clock, logger, metrics, decodes }) => {
    // One registry for the worker and the routes: the routes list and check the models the worker runs.
    const models = modelRegistry({ remote: config.cv.remoteModels, detector: config.cv.detector, logger });
    const unavailable = models.list().flatMap((model) => {
      const status = statusOf(model);
      return status.available ? [] : [`${model.name}: ${status.detail}`];
    });
    for (const problem of unavailable) logger.error({ problem }, 'A CV model cannot run; the others can');
    const worker = cvWorker({
      decodes,
      decodeLimits: config.mediaDecode,
      eventStore: stores.eventStore,
      readModels: stores.readModels,
      blobs: stores.blobs,
      models,
      clock,
      logger,
      pendingCollection: pendingCvJobsProjection.collection.name,
      observer: cvMetrics(metrics),
      settings: {
        ...defaultCvWorkerSettings,
        jobTimeoutMs: config.cv.jobTimeoutMs,
        concurrency: config.cv.concurrency,
      },
    });
    return {
      consumer: {
        ...worker,
        close: () => models.close(),
        unavailable: () => unavailable,
        metrics: {
          cvJobs: () => pendingCvJobs(stores.readModels, pendingCvJobsProjection.collection.name),
        },
      },
      routes: (context) => [
        cvApi({ ...context, models, projection: context.projections.of(cvJobsProjection) }),
      ],
    };
  },
};
