import Router from '@koa/router';
import type { ResourceRouteContext, RouteContext } from '../feature.js';
import { observationsQuery } from '../../projections/observations.js';
import { readMergePatch, decodedJsonBody } from '../http/body.js';
import { decodeOrThrow } from '../http/codec.js';
import { aggregateResource } from '../http/aggregate-resource.js';
import { projectedList } from '../http/paging.js';
import { pathParam } from '../http/resource.js';
import { readWriteGuards } from '../http/guard.js';
import type { ProjectionHandle } from '../readmodels/handles.js';
import {
  CreateObservationBody,
  ListObservationsQuery,
  PatchObservationBody,
  recordedFields,
} from './codecs.js';
import { observationDecider, observationOf } from './decider.js';
import { assertReferences } from './references.js';
import type { Observation } from './observation.js';

export interface ObservationsApiDeps
  extends ResourceRouteContext, Pick<RouteContext, 'consistencyTimeoutMs'> {
  projection: ProjectionHandle<Observation>;
}

export const observationsApi = (deps: ObservationsApiDeps): Router => {
  const router = new Router({ prefix: '/v1/tenants/:tenantId/observations' });
  const { read, write } = readWriteGuards(deps.auth, 'observations');
  const observations = aggregateResource(deps, observationDecider, observationOf);

  router.post('/', write, async (ctx) => {
    const body = await decodedJsonBody(ctx, CreateObservationBody, deps.bodyLimit);
    const tenantId = pathParam(ctx, 'tenantId');
    await assertReferences(deps.eventStore, tenantId, body);
    const observationId = deps.ids('o');
    await observations.create(
      ctx,
      { id: observationId, location: `/v1/tenants/${tenantId}/observations/${observationId}` },
      { type: 'RecordObservation', tenantId, observationId, fields: recordedFields(body) },
    );
  });

  router.get('/', read, projectedList(deps, deps.projection, ListObservationsQuery, observationsQuery));

  router.get('/:id', read, observations.read);

  router.patch('/:id', write, async (ctx) => {
    const patch = decodeOrThrow(PatchObservationBody, await readMergePatch(ctx, deps.bodyLimit));
    await assertReferences(deps.eventStore, pathParam(ctx, 'tenantId'), patch);
    await observations.change(ctx, { type: 'UpdateObservation', patch });
  });

  return router;
};
