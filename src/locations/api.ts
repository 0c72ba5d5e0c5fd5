import Router from '@koa/router';
import type { Context } from 'koa';
import { locationsQuery } from '../../projections/locations.js';
import { requireScope, type Authenticator } from '../http/guard.js';
import { handleCommand } from '../core/command-handler.js';
import type { Clock, IdGenerator } from '../core/ids.js';
import { streamName } from '../core/streams.js';
import type { EventStore } from '../eventstore/port.js';
import { readJsonBody, readMergePatch } from '../http/body.js';
import { decodeOrThrow } from '../http/codec.js';
import { commandContext } from '../http/command-context.js';

import type { CursorCodec } from '../http/cursor.js';
import { sendProjectedPage } from '../http/paging.js';
import { parseIfMatch, pathParam, sendAggregate, sendResource } from '../http/resource.js';
import type { ReadModelStore } from '../readmodels/port.js';
import type { ProjectionHandle } from '../readmodels/handles.js';
import { CreateLocationBody, ListLocationsQuery, PatchLocationBody } from './codecs.js';
import type { Location } from './decider.js';
import { locationDecider, locationOf } from './decider.js';

export interface LocationsApiDeps {
  eventStore: EventStore;
  readModels: ReadModelStore;
  projection: ProjectionHandle<Location>;
  cursors: CursorCodec;
  auth: Authenticator;
  clock: Clock;
  ids: IdGenerator;
  bodyLimit: number;
  consistencyTimeoutMs: number;
}

/** Locations: read with `locations:read`; created, patched (merge patch) and deleted with `locations:write`. */
export const locationsApi = (deps: LocationsApiDeps): Router => {
  const router = new Router({ prefix: '/v1/tenants/:tenantId/locations' });
  const read = requireScope(deps.auth, 'locations:read');
  const write = requireScope(deps.auth, 'locations:write');
  const stream = (ctx: Context) => streamName('location', pathParam(ctx, 'tenantId'), pathParam(ctx, 'id'));

  router.post('/', write, async (ctx) => {
    const body = decodeOrThrow(CreateLocationBody, await readJsonBody(ctx, { limit: deps.bodyLimit }));
    const tenantId = pathParam(ctx, 'tenantId');
    const locationId = deps.ids('l');
    const result = await handleCommand(
      deps.eventStore,
      locationDecider,
      streamName('location', tenantId, locationId),
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
      commandContext(ctx, deps),
    );
    ctx.set('Location', `/v1/tenants/${tenantId}/locations/${locationId}`);
    sendResource(ctx, 201, locationOf(result.state), result);
  });

  router.get('/', read, async (ctx) => {
    const params = decodeOrThrow(ListLocationsQuery, ctx.query);
    const query = locationsQuery(pathParam(ctx, 'tenantId'), params);
    await sendProjectedPage(ctx, deps, deps.projection, query, params);
  });

  router.get('/:id', read, (ctx) =>
    sendAggregate(ctx, deps.eventStore, locationDecider, stream(ctx), locationOf),
  );

  router.patch('/:id', write, async (ctx) => {
    const patch = decodeOrThrow(PatchLocationBody, await readMergePatch(ctx, deps.bodyLimit));
    const result = await handleCommand(
      deps.eventStore,
      locationDecider,
      stream(ctx),
      { type: 'UpdateLocation', patch },
      commandContext(ctx, deps),
      parseIfMatch(ctx.get('If-Match')),
    );
    sendResource(ctx, 200, locationOf(result.state), result);
  });

  router.delete('/:id', write, async (ctx) => {
    const result = await handleCommand(
      deps.eventStore,
      locationDecider,
      stream(ctx),
      { type: 'DeleteLocation' },
      commandContext(ctx, deps),
      parseIfMatch(ctx.get('If-Match')),
    );
    if (result.position !== null) ctx.set('X-Position', String(result.position));
    ctx.status = 204;
  });

  return router;
};
