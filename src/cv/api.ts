import Router from '@koa/router';
import type { ResourceRouteContext, RouteContext } from '../feature.js';
import { cvJobsQuery } from '../../projections/cv-jobs.js';
import { readWriteGuards } from '../http/guard.js';
import { readAggregate } from '../core/command-handler.js';
import { NotFoundError, ValidationError } from '../core/errors.js';
import { streamName } from '../core/streams.js';
import { decodedJsonBody } from '../http/body.js';
import { decodeOrThrow } from '../http/codec.js';
import { aggregateResource } from '../http/aggregate-resource.js';
import { projectedList } from '../http/paging.js';
import { pathParam } from '../http/resource.js';
import { observationDecider, observationOf } from '../observations/decider.js';
import type { ProjectionHandle } from '../readmodels/handles.js';
import { CreateCvJobBody, ListCvJobsQuery, NoParams } from './codecs.js';
import { cvJobDecider, jobOf, type CvJob } from './decider.js';
import type { ModelRegistry } from './models/registry.js';
import { statusOf, type CvModel } from './models/port.js';

export interface CvApiDeps extends ResourceRouteContext, Pick<RouteContext, 'consistencyTimeoutMs'> {
  models: ModelRegistry;
  /** The cv_jobs projection: the list reads it, and waits for it on `minPosition`. */
  projection: ProjectionHandle<CvJob>;
}

/** A model as `GET .../cv-models` lists it: whether it can run here, and what it finds. */
const modelListing = (model: CvModel) => {
  const { name, kind, description, returns, classes, about, deprecated } = model;
  const status = statusOf(model);
  return {
    name,
    kind,
    description,
    returns,
    available: status.available,
    ...(status.available ? {} : { problem: status.problem }),
    ...(classes ? { classes } : {}),
    ...(about ? { about } : {}),
    ...(deprecated ? { deprecated } : {}),
  };
};

/**
 * CV jobs: request a model run over an observation's image, follow it, list them. The request only
 * records the job (202); the worker (src/cv/worker.ts) runs it.
 */
export const cvApi = (deps: CvApiDeps): Router => {
  const router = new Router({ prefix: '/v1/tenants/:tenantId' });
  const { read, write } = readWriteGuards(deps.auth, 'cv');
  const jobs = aggregateResource(deps, cvJobDecider, jobOf);

  router.post('/cv-jobs', write, async (ctx) => {
    const body = await decodedJsonBody(ctx, CreateCvJobBody, deps.bodyLimit);
    const tenantId = pathParam(ctx, 'tenantId');
    if (!deps.models.get(body.model)) {
      const known = deps.models
        .list()
        .map((model) => model.name)
        .join(', ');
      throw new ValidationError([
        { path: 'model', message: `is not a known model; the models are ${known}` },
      ]);
    }
    // Another tenant's observation is in another tenant's stream: from here it does not exist.
    const { state } = await readAggregate(
      deps.eventStore,
      observationDecider,
      streamName('observation', tenantId, body.observationId),
    );
    const { media } = observationOf(state);
    if (media.length === 0) {
      throw new ValidationError([
        { path: 'observationId', message: 'has no media to analyse; upload an image to it first' },
      ]);
    }
    const medium = body.mediaId === undefined ? media.at(-1)! : media.find((m) => m.id === body.mediaId);
    if (!medium) throw new NotFoundError(`The observation has no medium ${body.mediaId}`);
    const jobId = deps.ids('j');
    await jobs.create(
      ctx,
      { id: jobId, location: `/v1/tenants/${tenantId}/cv-jobs/${jobId}`, status: 202 },
      {
        type: 'RequestJob',
        jobId,
        observationId: body.observationId,
        mediaId: medium.id,
        sha256: medium.sha256,
        model: body.model,
        parameters: body.parameters ?? {},
      },
    );
  });

  router.get('/cv-jobs', read, projectedList(deps, deps.projection, ListCvJobsQuery, cvJobsQuery));

  router.get('/cv-jobs/:id', read, jobs.read);

  router.get('/cv-models', read, (ctx) => {
    decodeOrThrow(NoParams, ctx.query);
    ctx.body = {
      data: deps.models.list().map(modelListing),
      nextCursor: null,
    };
  });

  return router;
};
