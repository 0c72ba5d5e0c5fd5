import Router from '@koa/router';
import type { Context } from 'koa';
import {
  observationSortValue,
  observationsProjection,
  observationsQuery,
} from '../../projections/observations.js';
import type { CommandContext } from '../core/command-handler.js';
import { handleCommand, toEnvelope } from '../core/command-handler.js';
import { fold } from '../core/decider.js';
import { NotFoundError, UnavailableError } from '../core/errors.js';
import type { Clock, IdGenerator } from '../core/ids.js';
import { streamName } from '../core/streams.js';
import type { EventStore } from '../eventstore/port.js';
import { readJsonBody } from '../http/body.js';
import { decodeOrThrow } from '../http/codec.js';
import { parseIfMatch, pathParam, sendResource } from '../http/resource.js';
import type { CursorCodec } from '../http/cursor.js';
import type { ReadModelStore } from '../readmodels/port.js';
import type { ProjectionRunner } from '../readmodels/runner.js';
import { CreateObservationBody, ListObservationsQuery, PatchObservationBody } from './codecs.js';
import { observationDecider } from './decider.js';
import type { Observation, ObservationEvent, ObservationState } from './observation.js';

export interface ObservationsApiDeps {
  eventStore: EventStore;
  readModels: ReadModelStore;
  projection: ProjectionRunner;
  cursors: CursorCodec;
  clock: Clock;
  ids: IdGenerator;
  bodyLimit: number;
  consistencyTimeoutMs: number;
}

const path = (tenantId: string, id: string) => `/v1/tenants/${tenantId}/observations/${id}`;

/** Every event a request writes carries the tenant, the actor, and the request as cause. */
export const commandContext = (ctx: Context, deps: { clock: Clock }): CommandContext => ({
  tenantId: pathParam(ctx, 'tenantId'),
  actor: (ctx.state.actor as string | undefined) ?? 'anonymous',
  correlationId: ctx.state.correlationId as string,
  causationId: ctx.state.requestId as string,
  now: deps.clock(),
  newEventId: () => crypto.randomUUID(),
});

const observationOf = (state: ObservationState): Observation => {
  if (state.status === 'absent') throw new NotFoundError('The observation does not exist');
  return state.observation;
};

export const observationsApi = (deps: ObservationsApiDeps): Router => {
  const router = new Router({ prefix: '/v1/tenants/:tenantId/observations' });
  const stream = (ctx: Context) =>
    streamName('observation', pathParam(ctx, 'tenantId'), pathParam(ctx, 'id'));

  router.post('/', async (ctx) => {
    const body = decodeOrThrow(CreateObservationBody, await readJsonBody(ctx, { limit: deps.bodyLimit }));
    const tenantId = pathParam(ctx, 'tenantId');
    const observationId = deps.ids('o');
    const result = await handleCommand(
      deps.eventStore,
      observationDecider,
      streamName('observation', tenantId, observationId),
      {
        type: 'RecordObservation',
        tenantId,
        observationId,
        fields: {
          observedAt: body.observedAt,
          position: body.position ?? null,
          locationId: body.locationId ?? null,
          visitId: body.visitId ?? null,
          notes: body.notes ?? null,
          attributes: body.attributes ?? {},
        },
      },
      commandContext(ctx, deps),
    );
    ctx.set('Location', path(tenantId, observationId));
    sendResource(ctx, 201, observationOf(result.state), result);
  });

  router.get('/', async (ctx) => {
    const params = decodeOrThrow(ListObservationsQuery, ctx.query);
    if (
      params.minPosition !== undefined &&
      !(await deps.projection.waitFor(params.minPosition, deps.consistencyTimeoutMs))
    ) {
      throw new UnavailableError(
        `The list has not caught up with position ${params.minPosition} yet; retry shortly`,
      );
    }
    const query = observationsQuery(pathParam(ctx, 'tenantId'), params);
    const queryKey = JSON.stringify([query.filters, query.sort]);
    const limit = params.limit ?? 50;
    const after = params.cursor === undefined ? undefined : deps.cursors.decode(params.cursor, queryKey);
    const rows = await deps.readModels.list<Observation>(observationsProjection.collection.name, {
      ...query,
      limit: limit + 1,
      ...(after ? { after } : {}),
    });
    const page = rows.slice(0, limit);
    const last = page.at(-1);
    const nextCursor =
      rows.length > limit && last
        ? deps.cursors.encode({ value: observationSortValue(last, query.sort.field), id: last.id }, queryKey)
        : null;
    ctx.set('X-Projection-Position', String(deps.projection.status().checkpoint));
    ctx.body = { data: page, nextCursor };
  });

  // A single observation is folded from its stream: always fresh, whatever the projection's lag.
  router.get('/:id', async (ctx) => {
    const events = await deps.eventStore.readStream(stream(ctx));
    const observation = observationOf(fold(observationDecider, events.map(toEnvelope<ObservationEvent>)));
    sendResource(ctx, 200, observation, { version: observation.version, position: null });
  });

  router.patch('/:id', async (ctx) => {
    const patch = decodeOrThrow(
      PatchObservationBody,
      await readJsonBody(ctx, {
        limit: deps.bodyLimit,
        mediaTypes: ['application/merge-patch+json', 'application/json'],
      }),
    );
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
