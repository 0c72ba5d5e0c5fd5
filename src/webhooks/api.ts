import Router from '@koa/router';
import type { ResourceRouteContext } from '../feature.js';
import type * as t from 'io-ts';
import type { Context } from 'koa';
import { deliveryAttemptsProjection, webhooksProjection } from '../../projections/webhooks.js';
import { requireScope } from '../http/guard.js';
import { handleCommand, readAggregate } from '../core/command-handler.js';
import { ConflictError, NotFoundError, ValidationError } from '../core/errors.js';
import { streamName } from '../core/streams.js';
import { decodedJsonBody } from '../http/body.js';
import { decodeOrThrow } from '../http/codec.js';
import { commandContext } from '../http/command-context.js';
import { listPage, oldestFirstList, pageOf, sendPage } from '../http/paging.js';
import { pathParam, sendResource } from '../http/resource.js';
import type { Filter } from '../readmodels/port.js';
import type { TenantPrincipal } from '../core/principal.js';
import { CreateWebhookBody, DeliveriesQuery, EnableBody, RotateSecretBody, TestEventBody } from './codecs.js';
import { assertMaySubscribe, type WebhookOwner } from './creator.js';
import { deliveryDecider } from './delivery.decider.js';
import { mappedDomainEventTypes, toExternal, type ExternalEventType } from './external.js';
import { exampleEvent } from './examples.js';
import { seal } from './secret-box.js';
import { generateSecret, standardForm } from './secrets.js';
import { checkReceiverUrl } from './sender.js';
import {
  entryOf,
  foldRecorded,
  webhooksDecider,
  webhooksStream,
  type WebhookCommand,
  type WebhookSubscription,
} from './subscription.decider.js';
import type { WebhookWorker } from './worker.js';

export interface WebhooksApiDeps extends ResourceRouteContext {
  worker: WebhookWorker;
  webhooks: {
    allowHttp: boolean;
    allowLoopback: boolean;
    allowPrivateNetworks: boolean;
    maxSubscriptions: number;
    secretKey: string;
  };
}

/**
 * Whether the request has a body: a Content-Length above 0, or one sent in chunks (no Content-Length at all),
 * whose replayMissed would otherwise be dropped without a word.
 */
const hasBody = (ctx: Context): boolean => Boolean(ctx.request.length) || ctx.get('Transfer-Encoding') !== '';

/** The caller, as the owner a subscription records: its credential and the scopes it holds now. */
const ownerOf = (ctx: Context): WebhookOwner => {
  const principal = ctx.state.principal as TenantPrincipal;
  return { actor: principal.actor, scopes: [...principal.scopes] };
};

/** How long the secret a rotation replaces keeps signing beside the new one. */
export const rotationGraceMs = 24 * 60 * 60 * 1000;

const subscriptionOf = (subscription: WebhookSubscription | undefined): WebhookSubscription => {
  if (!subscription) throw new NotFoundError('No such webhook subscription');
  return subscription;
};

/** Webhook subscriptions and their delivery log; every route needs `webhooks:manage`. */
export const webhooksApi = (deps: WebhooksApiDeps): Router => {
  const router = new Router({ prefix: '/v1/tenants/:tenantId/webhooks' });
  const manage = requireScope(deps.auth, 'webhooks:manage');
  const tenantOf = (ctx: Context) => pathParam(ctx, 'tenantId');
  const stored = async (ctx: Context) =>
    foldRecorded(await deps.eventStore.readStream(webhooksStream(tenantOf(ctx))));
  /** A command on the tenant's subscriptions, on behalf of the request. */
  const onSubscriptions = (ctx: Context, command: WebhookCommand) =>
    handleCommand(
      deps.eventStore,
      webhooksDecider,
      webhooksStream(tenantOf(ctx)),
      command,
      commandContext(ctx, deps),
    );
  /** The body of a route whose body is optional: `{}` without one. */
  const optionalBody = async <A>(ctx: Context, codec: t.Type<A, A, unknown>): Promise<Partial<A>> =>
    hasBody(ctx) ? await decodedJsonBody(ctx, codec, deps.bodyLimit) : {};

  router.post('/', manage, async (ctx) => {
    const body = await decodedJsonBody(ctx, CreateWebhookBody, deps.bodyLimit);
    const events = body.events as ExternalEventType[];
    assertMaySubscribe(ownerOf(ctx).scopes ?? [], events);
    const urlProblem = await checkReceiverUrl(body.url, deps.webhooks);
    if (urlProblem) throw new ValidationError([{ path: 'url', message: urlProblem }]);
    const webhookId = deps.ids('w');
    const secret = body.secret ?? generateSecret();
    const result = await onSubscriptions(ctx, {
      type: 'Subscribe',
      webhookId,
      url: body.url,
      events,
      sealedSecret: seal(secret, deps.webhooks.secretKey),
      max: deps.webhooks.maxSubscriptions,
      owner: ownerOf(ctx),
    });
    ctx.set('Location', `/v1/tenants/${tenantOf(ctx)}/webhooks/${webhookId}`);
    // The only answer that holds the secret, in the form the Standard Webhooks libraries take.
    const subscription = subscriptionOf(entryOf(result.state, webhookId)?.subscription);
    sendResource(ctx, 201, { ...subscription, secret: standardForm(secret) }, result);
  });

  router.post('/:id/secret/rotate', manage, async (ctx) => {
    const body = await optionalBody(ctx, RotateSecretBody);
    const webhookId = pathParam(ctx, 'id');
    const secret = body.secret ?? generateSecret();
    const result = await onSubscriptions(ctx, {
      type: 'RotateSecret',
      webhookId,
      sealedSecret: seal(secret, deps.webhooks.secretKey),
      previousSecretExpiresAt: new Date(deps.clock().getTime() + rotationGraceMs),
    });
    const entry = entryOf(result.state, webhookId);
    sendResource(
      ctx,
      200,
      {
        ...subscriptionOf(entry?.subscription),
        secret: standardForm(secret),
        previousSecretExpiresAt: entry?.previousSecretExpiresAt ?? null,
      },
      result,
    );
  });

  router.get(
    '/',
    manage,
    oldestFirstList(deps, webhooksProjection.collection.name, (ctx) => ({
      tenantId: tenantOf(ctx),
      filters: [],
    })),
  );

  router.get('/:id', manage, async (ctx) => {
    const state = await stored(ctx);
    ctx.body = subscriptionOf(entryOf(state, pathParam(ctx, 'id'))?.subscription);
  });

  router.delete('/:id', manage, async (ctx) => {
    await onSubscriptions(ctx, { type: 'Delete', webhookId: pathParam(ctx, 'id') });
    ctx.status = 204;
  });

  router.post('/:id/enable', manage, async (ctx) => {
    const body = await optionalBody(ctx, EnableBody);
    const webhookId = pathParam(ctx, 'id');
    const before = entryOf(await stored(ctx), webhookId);
    // Whoever enables a disabled subscription becomes its owner, so they must be able to read what it lists.
    if (subscriptionOf(before?.subscription).status === 'disabled')
      assertMaySubscribe(ownerOf(ctx).scopes ?? [], before!.subscription.events);
    const result = await onSubscriptions(ctx, {
      type: 'Enable',
      webhookId,
      replayMissed: body.replayMissed ?? false,
      owner: ownerOf(ctx),
    });
    const replayed =
      body.replayMissed && result.position !== null && before?.disabledAtPosition != null
        ? (await redeliverExhausted(ctx, webhookId, before.disabledByDelivery)) +
          (await replayMissed(ctx, before.subscription, before.disabledAtPosition, result.position))
        : 0;
    sendResource(
      ctx,
      200,
      { ...subscriptionOf(entryOf(result.state, webhookId)?.subscription), replayed },
      result,
    );
  });

  /**
   * Schedules what the subscription missed while it was disabled: the events between the disable and now,
   * and the deliveries the disable cancelled (events from before it whose retries were still pending).
   */
  const replayMissed = async (
    ctx: Context,
    subscription: WebhookSubscription,
    from: number,
    until: number,
  ) => {
    let replayed = 0;
    let after = from;
    for (;;) {
      const page = await deps.eventStore.readAll({
        after,
        maxCount: 500,
        filter: { tenantId: tenantOf(ctx), eventTypes: [...mappedDomainEventTypes, 'DeliveryCancelled'] },
      });
      for (const event of page.events.filter((candidate) => candidate.position < until)) {
        if (event.type === 'DeliveryCancelled') {
          if (await resumeCancelled(ctx, subscription.id, (event.data as { deliveryId: string }).deliveryId))
            replayed += 1;
          continue;
        }
        for (const external of toExternal(event).filter((candidate) =>
          subscription.events.includes(candidate.type),
        )) {
          const deliveryId = await deps.worker.schedule(tenantOf(ctx), subscription.id, external, event.id);
          if (deliveryId) {
            deps.worker.kick(tenantOf(ctx), deliveryId, subscription.id);
            replayed += 1;
          }
        }
      }
      after = page.lastPosition;
      if (page.isEnd || after >= until) return replayed;
    }
  };

  /** A delivery sent again, as a redelivery: recorded, then handed to the worker at once. */
  const redeliver = async (ctx: Context, webhookId: string, deliveryId: string, stream: string) => {
    const result = await handleCommand(
      deps.eventStore,
      deliveryDecider,
      stream,
      { type: 'Redeliver' },
      commandContext(ctx, deps),
    );
    deps.worker.kick(tenantOf(ctx), deliveryId, webhookId);
    return result;
  };

  /**
   * The delivery whose retries ran out, which disabled the subscription, is sent again: once, as a
   * redelivery (its retry schedule is spent). 1 when it was, 0 when there is none or it has moved on.
   */
  const redeliverExhausted = async (ctx: Context, webhookId: string, deliveryId: string | null) => {
    if (deliveryId === null) return 0;
    const stream = streamName('delivery', tenantOf(ctx), deliveryId);
    const { state } = await readAggregate(deps.eventStore, deliveryDecider, stream);
    if (state.status === 'absent' || state.delivery.status !== 'failed') return 0;
    await redeliver(ctx, webhookId, deliveryId, stream);
    return 1;
  };

  /** A cancelled delivery of this subscription (cancels are only ever for a disable or a delete) resumes. */
  const resumeCancelled = async (ctx: Context, webhookId: string, deliveryId: string) => {
    const stream = streamName('delivery', tenantOf(ctx), deliveryId);
    const { state } = await readAggregate(deps.eventStore, deliveryDecider, stream);
    if (state.status === 'absent' || state.delivery.webhookId !== webhookId) return false;
    return deps.worker.resume(tenantOf(ctx), deliveryId);
  };

  router.post('/:id/test', manage, async (ctx) => {
    const body = await optionalBody(ctx, TestEventBody);
    const webhookId = pathParam(ctx, 'id');
    const subscription = subscriptionOf(entryOf(await stored(ctx), webhookId)?.subscription);
    const type = (body.type as ExternalEventType | undefined) ?? subscription.events[0]!;
    const payload = exampleEvent(type, tenantOf(ctx), deps.clock());
    const { deliveryId, outcome } = await deps.worker.test(tenantOf(ctx), webhookId, payload);
    if (!outcome)
      throw new ConflictError(
        'The test event was not sent: the subscription was deleted or disabled meanwhile',
      );
    ctx.body = {
      deliveryId,
      eventId: payload.id,
      eventType: type,
      ...outcome,
      responseBody: outcome.responseBody ?? null,
    };
  });

  router.get('/:id/deliveries', manage, async (ctx) => {
    const params = decodeOrThrow(DeliveriesQuery, ctx.query);
    const webhookId = pathParam(ctx, 'id');
    subscriptionOf(entryOf(await stored(ctx), webhookId)?.subscription);
    const filters: Filter[] = [{ op: 'eq', field: 'webhookId', value: webhookId }];
    if (params.status) filters.push({ op: 'eq', field: 'status', value: params.status });
    if (params.eventType) filters.push({ op: 'eq', field: 'eventType', value: params.eventType });
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

  router.post('/:id/deliveries/:deliveryId/redeliver', manage, async (ctx) => {
    const webhookId = pathParam(ctx, 'id');
    const deliveryId = pathParam(ctx, 'deliveryId');
    // A deleted subscription has no deliveries to send again (its attempt would only be cancelled).
    subscriptionOf(entryOf(await stored(ctx), webhookId)?.subscription);
    const stream = streamName('delivery', tenantOf(ctx), deliveryId);
    const { state } = await readAggregate(deps.eventStore, deliveryDecider, stream);
    if (state.status === 'absent' || state.delivery.webhookId !== webhookId)
      throw new NotFoundError('No such delivery');
    const result = await redeliver(ctx, webhookId, deliveryId, stream);
    if (result.state.status === 'absent') throw new NotFoundError('No such delivery');
    // The claim id is the deliverer's fence (delivery.decider.ts), not part of the API's delivery.
    const { payload: _payload, claimId: _claimId, ...delivery } = result.state.delivery;
    ctx.status = 202;
    ctx.body = delivery;
  });

  return router;
};
