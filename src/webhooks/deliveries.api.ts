import type Router from '@koa/router';
import type { Context, Middleware } from 'koa';
import { deliveryAttemptsProjection, type DeliveryAttemptRecord } from '../../projections/webhooks.js';
import { readAggregate } from '../core/command-handler.js';
import { ConflictError, NotFoundError } from '../core/errors.js';
import type { RecordedEvent } from '../core/events.js';
import { streamName } from '../core/streams.js';
import type { ResourceRouteContext } from '../feature.js';
import { decodedJsonBody } from '../http/body.js';
import { decodeOrThrow } from '../http/codec.js';
import { listPage, pageOf, sendPage } from '../http/paging.js';
import { pathParam } from '../http/resource.js';
import type { Filter } from '../readmodels/port.js';
import { DeliveriesQuery, ReplayBody, replayLimit } from './codecs.js';
import { deliveryDecider, type DeliveryEvent } from './delivery.decider.js';
import { replays } from './replay.js';
import type { WebhookSubscription } from './subscription.decider.js';
import type { WebhookWorker } from './worker.js';

export interface DeliveriesRoutesDeps extends ResourceRouteContext {
  worker: WebhookWorker;
  bodyLimit: number;
}

type Attempted = Extract<DeliveryEvent, { type: 'DeliveryAttempted' }>;

/** One attempt as its details show it: the request as sent (headers with signatures, never the secret). */
const attemptDetails = (event: RecordedEvent) => {
  const { data } = event as unknown as Attempted;
  return {
    attempt: data.attempt,
    attemptedAt: event.metadata.occurredAt,
    status: data.ok ? 'succeeded' : 'failed',
    statusCode: data.statusCode,
    durationMs: data.durationMs,
    error: data.error,
    responseBody: data.responseBody ?? null,
    nextAttemptAt: data.nextAttemptAt,
    request: data.request ?? null,
  };
};

/**
 * The delivery log's routes under `/v1/tenants/:tenantId/webhooks/:id/deliveries`, and the replay of failed
 * deliveries. `subscriptionOf` reads the path's subscription (404 when deleted).
 */
export const deliveriesRoutes = (
  router: Router,
  deps: DeliveriesRoutesDeps,
  manage: Middleware,
  subscriptionOf: (ctx: Context) => Promise<WebhookSubscription>,
): void => {
  const tenantOf = (ctx: Context) => pathParam(ctx, 'tenantId');
  /** While paused nothing is sent: what a user asks to send again waits for the resume too. */
  const sendable = async (ctx: Context) => {
    const subscription = await subscriptionOf(ctx);
    if (subscription.status === 'paused')
      throw new ConflictError('The subscription is paused: resume it, and what it holds back goes out');
    return subscription;
  };
  /** The path's delivery, read from its stream; 404 unless it belongs to the path's subscription. */
  const deliveryOf = async (ctx: Context) => {
    const stream = streamName('delivery', tenantOf(ctx), pathParam(ctx, 'deliveryId'));
    const read = await readAggregate(deps.eventStore, deliveryDecider, stream);
    if (read.state.status === 'absent' || read.state.delivery.webhookId !== pathParam(ctx, 'id'))
      throw new NotFoundError('No such delivery');
    return { ...read, delivery: read.state.delivery, stream };
  };

  router.get('/:id/deliveries', manage, async (ctx) => {
    const params = decodeOrThrow(DeliveriesQuery, ctx.query);
    await subscriptionOf(ctx);
    const filters: Filter[] = [{ op: 'eq', field: 'webhookId', value: pathParam(ctx, 'id') }];
    if (params.status) filters.push({ op: 'eq', field: 'status', value: params.status });
    if (params.eventType) filters.push({ op: 'eq', field: 'eventType', value: params.eventType });
    if (params.test) filters.push({ op: 'eq', field: 'test', value: params.test === 'true' });
    sendPage(
      ctx,
      await listPage(
        deps,
        deliveryAttemptsProjection.collection.name,
        { tenantId: tenantOf(ctx), filters, sort: { field: 'attemptedAt', direction: 'desc' } },
        pageOf(params),
      ),
    );
  });

  router.get('/:id/deliveries/:deliveryId', manage, async (ctx) => {
    await subscriptionOf(ctx);
    const { delivery } = await deliveryOf(ctx);
    const recorded = await deps.eventStore.readStream(
      streamName('delivery', tenantOf(ctx), delivery.deliveryId),
    );
    const { claimId: _claimId, claimTimeoutMs: _claimTimeoutMs, ...shown } = delivery;
    ctx.body = {
      ...shown,
      attemptLog: recorded.filter((event) => event.type === 'DeliveryAttempted').map(attemptDetails),
    };
  });

  router.post('/:id/deliveries/:deliveryId/redeliver', manage, async (ctx) => {
    // A deleted subscription has no deliveries to send again (its attempt would only be cancelled).
    await sendable(ctx);
    const { delivery } = await deliveryOf(ctx);
    const result = await replays(deps, tenantOf(ctx)).redeliver(ctx, delivery.webhookId, delivery.deliveryId);
    if (result.state.status === 'absent') throw new NotFoundError('No such delivery');
    // The claim's id and time-out are the deliverer's (delivery.decider.ts), not part of the API's delivery.
    const {
      payload: _payload,
      claimId: _claimId,
      claimTimeoutMs: _claimTimeoutMs,
      ...shown
    } = result.state.delivery;
    ctx.status = 202;
    ctx.body = shown;
  });

  router.post('/:id/replay', manage, async (ctx) => {
    const { since } = await decodedJsonBody(ctx, ReplayBody, deps.bodyLimit);
    const subscription = await sendable(ctx);
    const failedAttempts = await deps.readModels.list<DeliveryAttemptRecord>(
      deliveryAttemptsProjection.collection.name,
      {
        tenantId: tenantOf(ctx),
        filters: [
          { op: 'eq', field: 'webhookId', value: subscription.id },
          { op: 'eq', field: 'status', value: 'failed' },
          { op: 'gte', field: 'attemptedAt', value: since },
        ],
        sort: { field: 'attemptedAt', direction: 'asc' },
        // A delivery fails several times: enough attempts to find the bound's worth of deliveries.
        limit: replayLimit * 8,
      },
    );
    const candidates = [...new Set(failedAttempts.map((attempt) => attempt.deliveryId))];
    const { redeliver } = replays(deps, tenantOf(ctx));
    let replayed = 0;
    for (const deliveryId of candidates) {
      if (replayed === replayLimit) break;
      const stream = streamName('delivery', tenantOf(ctx), deliveryId);
      const { state } = await readAggregate(deps.eventStore, deliveryDecider, stream);
      // Only what ended failed: a delivery retrying still, or since delivered, is left alone.
      if (state.status === 'absent' || state.delivery.status !== 'failed' || state.delivery.test) continue;
      await redeliver(ctx, subscription.id, deliveryId);
      replayed += 1;
    }
    ctx.status = 202;
    ctx.body = {
      replayed,
      more: replayed === replayLimit || failedAttempts.length === replayLimit * 8,
    };
  });
};
