import Router from '@koa/router';
import type { ResourceRouteContext, RouteContext } from '../feature.js';
import { locationsQuery } from '../../projections/locations.js';
import { readWriteGuards } from '../http/guard.js';
import { readMergePatch, decodedJsonBody } from '../http/body.js';
import { decodeOrThrow } from '../http/codec.js';
import { aggregateResource } from '../http/aggregate-resource.js';
import { projectedList } from '../http/paging.js';
import { pathParam } from '../http/resource.js';
import type { ProjectionHandle } from '../readmodels/handles.js';
import { CreateLocationBody, ListLocationsQuery, PatchLocationBody } from './codecs.js';
import type { Location } from './decider.js';
import { locationDecider, locationOf } from './decider.js';

export interface LocationsApiDeps extends ResourceRouteContext, Pick<RouteContext, 'consistencyTimeoutMs'> {
  projection: ProjectionHandle<Location>;
}

/** Locations: read with `locations:read`; created, patched (merge patch) and deleted with `locations:write`. */
export const locationsApi = (deps: LocationsApiDeps): Router => {
  const router = new Router({ prefix: '/v1/tenants/:tenantId/locations' });
  const { read, write } = readWriteGuards(deps.auth, 'locations');
  const locations = aggregateResource(deps, locationDecider, locationOf);

  router.post('/', write, async (ctx) => {
    const body = await decodedJsonBody(ctx, CreateLocationBody, deps.bodyLimit);
    const locationId = deps.ids('l');
    await locations.create(
      ctx,
      { id: locationId, location: `/v1/tenants/${pathParam(ctx, 'tenantId')}/locations/${locationId}` },
      {
        type: 'CreateLocation',
        locationId,
        fields: {
          name: body.name,
          position: body.position,
          boundary: body.boundary ?? null,
          attributes: body.attributes ?? {},
        },
      },
    );
  });

  router.get('/', read, projectedList(deps, deps.projection, ListLocationsQuery, locationsQuery));

  router.get('/:id', read, locations.read);

  router.patch('/:id', write, async (ctx) => {
    const patch = decodeOrThrow(PatchLocationBody, await readMergePatch(ctx, deps.bodyLimit));
    await locations.change(ctx, { type: 'UpdateLocation', patch });
  });

  router.delete('/:id', write, (ctx) => locations.remove(ctx, { type: 'DeleteLocation' }));

  return router;
};
