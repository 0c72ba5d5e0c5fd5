import Router from '@koa/router';
import type { Context } from 'koa';
import { observationsQuery } from '../../projections/observations.js';
import { handleCommand } from '../core/command-handler.js';
import type { Clock, IdGenerator } from '../core/ids.js';
import { streamName } from '../core/streams.js';
import type { EventStore } from '../eventstore/port.js';
import { readJsonBody, readMergePatch } from '../http/body.js';
import { decodeOrThrow } from '../http/codec.js';
import { commandContext } from '../http/command-context.js';
import { sendProjectedPage } from '../http/paging.js';

import { parseIfMatch, pathParam, sendAggregate, sendResource } from '../http/resource.js';
import type { CursorCodec } from '../http/cursor.js';
import { requireScope, type Authenticator } from '../http/guard.js';
import type { ReadModelStore } from '../readmodels/port.js';
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

export interface ObservationsApiDeps {
  eventStore: EventStore;
  readModels: ReadModelStore;
  projection: ProjectionHandle<Observation>;
  cursors: CursorCodec;
  clock: Clock;
  ids: IdGenerator;
  bodyLimit: number;
  consistencyTimeoutMs: number;
  auth: Authenticator;
}

const path = (tenantId: string, id: string) => `/v1/tenants/${tenantId}/observations/${id}`;

export const observationsApi = (deps: ObservationsApiDeps): Router => {
  const router = new Router({ prefix: '/v1/tenants/:tenantId/observations' });
  const read = requireScope(deps.auth, 'observations:read');
  const write = requireScope(deps.auth, 'observations:write');
  const stream = (ctx: Context) =>
    streamName('observation', pathParam(ctx, 'tenantId'), pathParam(ctx, 'id'));

  router.post('/', write, async (ctx) => {
    const body = decodeOrThrow(CreateObservationBody, await readJsonBody(ctx, { limit: deps.bodyLimit }));
    const tenantId = pathParam(ctx, 'tenantId');
    await assertReferences(deps.eventStore, tenantId, body);
    const observationId = deps.ids('o');
    const result = await handleCommand(
      deps.eventStore,
      observationDecider,
      streamName('observation', tenantId, observationId),
      {
        type: 'RecordObservation',
        tenantId,
        observationId,
        fields: recordedFields(body),
      },
      commandContext(ctx, deps),
    );
    ctx.set('Location', path(tenantId, observationId));
    sendResource(ctx, 201, observationOf(result.state), result);
  });

  router.get('/', read, async (ctx) => {
    const params = decodeOrThrow(ListObservationsQuery, ctx.query);
    const query = observationsQuery(pathParam(ctx, 'tenantId'), params);
    await sendProjectedPage(ctx, deps, deps.projection, query, params);
  });

  // A single observation is folded from its stream: always fresh, whatever the projection's lag.
  router.get('/:id', read, (ctx) =>
    sendAggregate(ctx, deps.eventStore, observationDecider, stream(ctx), observationOf),
  );

  router.patch('/:id', write, async (ctx) => {
    const patch = decodeOrThrow(PatchObservationBody, await readMergePatch(ctx, deps.bodyLimit));
    await assertReferences(deps.eventStore, pathParam(ctx, 'tenantId'), patch);
    const result = await handleCommand(
      deps.eventStore,
      observationDecider,
      stream(ctx),
      { type: 'UpdateObservation', patch },
      commandContext(ctx, deps),
      parseIfMatch(ctx.get('If-Match')),
    );
    sendResource(ctx, 200, observationOf(result.state), result);
  });

  return router;
};
