import Router from '@koa/router';
import type { ResourceRouteContext } from '../feature.js';
import type * as t from 'io-ts';
import type { Context } from 'koa';
import { webhooksProjection } from '../../projections/webhooks.js';
import { requireScope } from '../http/guard.js';
import { handleCommand } from '../core/command-handler.js';
import { retryOnConflict } from '../core/conflicts.js';
import { ConflictError, NotFoundError, ValidationError } from '../core/errors.js';
import { decodedJsonBody } from '../http/body.js';
import { decodeOrThrow } from '../http/codec.js';
import { commandContext } from '../http/command-context.js';
import { ListParams, listPage, pageOf } from '../http/paging.js';
import { pathParam, sendResource } from '../http/resource.js';
import type { TenantPrincipal } from '../core/principal.js';
import {
  healthOf,
  webhookHealthProjection,
  type WebhookHealthRecord,
} from '../../projections/webhook-health.js';
import { deliveriesRoutes } from './deliveries.api.js';
import { replays } from './replay.js';
import { CreateWebhookBody, EnableBody, RotateSecretBody, TestEventBody } from './codecs.js';
import { assertMaySubscribe, type WebhookOwner } from './creator.js';
import type { ExternalEventType } from './external.js';
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
  type WebhooksState,
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

/** Tries of a command on a tenant's subscriptions: each round of requests racing at once lets one through. */
const subscriptionCommandAttempts = 20;

/** Webhook subscriptions and their delivery log; every route needs `webhooks:manage`. */
export const webhooksApi = (deps: WebhooksApiDeps): Router => {
  const router = new Router({ prefix: '/v1/tenants/:tenantId/webhooks' });
  const manage = requireScope(deps.auth, 'webhooks:manage');
  const tenantOf = (ctx: Context) => pathParam(ctx, 'tenantId');
  const stored = async (ctx: Context) =>
    foldRecorded(await deps.eventStore.readStream(webhooksStream(tenantOf(ctx))));
  /**
   * A command on the tenant's subscriptions, on behalf of the request. Every subscription of a tenant is in
   * one stream, which other requests and the worker (disabling one) append to as well, and no route takes
   * If-Match: a race lost is no conflict the caller could see, so it is decided again on the newer state.
   */
  const onSubscriptions = (ctx: Context, command: WebhookCommand) =>
    retryOnConflict(
      () =>
        handleCommand(
          deps.eventStore,
          webhooksDecider,
          webhooksStream(tenantOf(ctx)),
          command,
          commandContext(ctx, deps),
        ),
      subscriptionCommandAttempts,
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

  /** Subscriptions with their health (projections/webhook-health.ts), read in one query. */
  const withHealth = async (tenantId: string, subscriptions: readonly WebhookSubscription[]) => {
    const records = await deps.readModels.getMany<WebhookHealthRecord>(
      webhookHealthProjection.collection.name,
      subscriptions.map(({ id }) => ({ tenantId, id })),
    );
    return subscriptions.map((subscription, index) => ({
      ...subscription,
      health: healthOf(records[index]?.doc ?? null, subscription.status),
    }));
  };

  /** The subscription a command left, with its health, and what the route adds. */
  const sendWithHealth = async (
    ctx: Context,
    state: WebhooksState,
    webhookId: string,
    result: Parameters<typeof sendResource>[3],
    extra: Record<string, unknown> = {},
  ) => {
    const [shown] = await withHealth(tenantOf(ctx), [
      subscriptionOf(entryOf(state, webhookId)?.subscription),
    ]);
    sendResource(ctx, 200, { ...shown, ...extra }, result);
  };

  router.get('/', manage, async (ctx) => {
    const params = decodeOrThrow(ListParams, ctx.query);
    const query = {
      tenantId: tenantOf(ctx),
      filters: [],
      sort: { field: 'createdAt', direction: 'asc' as const },
    };
    const page = JSON.parse(
      await listPage(deps, webhooksProjection.collection.name, query, pageOf(params)),
    ) as { data: WebhookSubscription[]; nextCursor: string | null };
    ctx.body = { data: await withHealth(tenantOf(ctx), page.data), nextCursor: page.nextCursor };
  });

  router.get('/:id', manage, async (ctx) => {
    const state = await stored(ctx);
    const [shown] = await withHealth(tenantOf(ctx), [
      subscriptionOf(entryOf(state, pathParam(ctx, 'id'))?.subscription),
    ]);
    ctx.body = shown;
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
    const { redeliverExhausted, replayMissed } = replays(deps, tenantOf(ctx));
    const replayed =
      body.replayMissed && result.position !== null && before?.disabledAtPosition != null
        ? (await redeliverExhausted(ctx, webhookId, before.disabledByDelivery)) +
          (await replayMissed(before.subscription, before.disabledAtPosition, result.position))
        : 0;
    await sendWithHealth(ctx, result.state, webhookId, result, { replayed });
  });

  router.post('/:id/pause', manage, async (ctx) => {
    const webhookId = pathParam(ctx, 'id');
    const result = await onSubscriptions(ctx, { type: 'Pause', webhookId });
    await sendWithHealth(ctx, result.state, webhookId, result);
  });

  // What the pause held back goes out now, in the order it happened, as an enable with replayMissed does.
  router.post('/:id/resume', manage, async (ctx) => {
    const webhookId = pathParam(ctx, 'id');
    const before = entryOf(await stored(ctx), webhookId);
    const result = await onSubscriptions(ctx, { type: 'Resume', webhookId });
    const replayed =
      result.events.length > 0 && result.position !== null && before?.pausedAtPosition != null
        ? await replays(deps, tenantOf(ctx)).replayMissed(
            before.subscription,
            before.pausedAtPosition,
            result.position,
          )
        : 0;
    await sendWithHealth(ctx, result.state, webhookId, result, { replayed });
  });

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

  deliveriesRoutes(router, deps, manage, async (ctx) =>
    subscriptionOf(entryOf(await stored(ctx), pathParam(ctx, 'id'))?.subscription),
  );

  return router;
};
