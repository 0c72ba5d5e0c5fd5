import Router from '@koa/router';
import type { ResourceRouteContext, RouteContext } from '../feature.js';
import { visitsQuery } from '../../projections/visits.js';
import { readWriteGuards } from '../http/guard.js';
import { readAggregate } from '../core/command-handler.js';
import { UnavailableError } from '../core/errors.js';
import { readMergePatch, decodedJsonBody } from '../http/body.js';
import { decodeOrThrow } from '../http/codec.js';
import { aggregateResource } from '../http/aggregate-resource.js';
import { projectedList } from '../http/paging.js';
import { pathParam } from '../http/resource.js';
import { assertReferences } from '../observations/references.js';
import type { Observation } from '../observations/observation.js';
import type { ProjectionHandle } from '../readmodels/handles.js';
import { CreateVisitBody, ListVisitsQuery, PatchVisitBody } from './codecs.js';
import type { Visit } from './decider.js';
import { visitDecider, visitOf } from './decider.js';

export interface VisitsApiDeps extends ResourceRouteContext, Pick<RouteContext, 'consistencyTimeoutMs'> {
  projection: ProjectionHandle<Visit>;
  /** The observations read model, where the observations of a visit are collected at its submission. */
  observations: ProjectionHandle<Observation>;
}

/**
 * Field visits. They belong to the field work on observations, so they take the observation scopes:
 * `observations:read` to read, `observations:write` to create, patch (while a draft) and submit.
 */
export const visitsApi = (deps: VisitsApiDeps): Router => {
  const router = new Router({ prefix: '/v1/tenants/:tenantId/visits' });
  const { read, write } = readWriteGuards(deps.auth, 'observations');
  const visits = aggregateResource(deps, visitDecider, visitOf);

  /** Every observation whose visitId names the visit, once the observations read model has caught up. */
  const observationsOf = async (tenantId: string, visitId: string): Promise<string[]> => {
    if (
      !(await deps.observations.runner.waitFor(
        await deps.eventStore.headPosition(),
        deps.consistencyTimeoutMs,
      ))
    ) {
      throw new UnavailableError('The observations of the visit cannot be collected yet; retry shortly');
    }
    const ids: string[] = [];
    let after: { value: string | null; id: string } | undefined;
    for (;;) {
      const page = await deps.readModels.list<Observation>(deps.observations.projection.collection.name, {
        tenantId,
        filters: [{ op: 'eq', field: 'visitId', value: visitId }],
        sort: { field: 'observedAt', direction: 'asc' },
        limit: 1000,
        ...(after ? { after } : {}),
      });
      ids.push(...page.map((observation) => observation.id));
      const last = page.at(-1);
      if (!last || page.length < 1000) return ids;
      after = { value: last.observedAt, id: last.id };
    }
  };

  router.post('/', write, async (ctx) => {
    const body = await decodedJsonBody(ctx, CreateVisitBody, deps.bodyLimit);
    const tenantId = pathParam(ctx, 'tenantId');
    await assertReferences(deps.eventStore, tenantId, { locationId: body.locationId });
    const visitId = deps.ids('v');
    await visits.create(
      ctx,
      { id: visitId, location: `/v1/tenants/${tenantId}/visits/${visitId}` },
      {
        type: 'CreateVisit',
        visitId,
        fields: {
          locationId: body.locationId,
          startedAt: body.startedAt,
          endedAt: body.endedAt ?? null,
          participants: body.participants ?? [],
          notes: body.notes ?? null,
        },
      },
    );
  });

  router.get('/', read, projectedList(deps, deps.projection, ListVisitsQuery, visitsQuery));

  router.get('/:id', read, visits.read);

  router.patch('/:id', write, async (ctx) => {
    const patch = decodeOrThrow(PatchVisitBody, await readMergePatch(ctx, deps.bodyLimit));
    await assertReferences(deps.eventStore, pathParam(ctx, 'tenantId'), {
      locationId: patch.locationId ?? null,
    });
    await visits.change(ctx, { type: 'UpdateVisit', patch });
  });

  router.post('/:id/submit', write, async (ctx) => {
    const tenantId = pathParam(ctx, 'tenantId');
    // An unknown visit is a 404 before its observations are collected.
    visitOf((await readAggregate(deps.eventStore, visitDecider, visits.stream(ctx))).state);
    const observationIds = await observationsOf(tenantId, pathParam(ctx, 'id'));
    await visits.change(ctx, { type: 'SubmitVisit', observationIds });
  });

  return router;
};
