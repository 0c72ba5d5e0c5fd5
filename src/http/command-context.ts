import type { Context } from 'koa';
import type { CommandContext } from '../core/command-handler.js';
import type { Clock } from '../core/ids.js';
import { pathParam } from './resource.js';

/**
 * Every event a request writes carries the tenant, the authenticated actor, and the request as cause.
 * The tenant is the one in the path unless the command creates it. A request that holds an Idempotency-Key
 * checks that it still may write before its first append (src/http/idempotency.ts).
 */
export const commandContext = (
  ctx: Context,
  deps: { clock: Clock },
  tenantId = pathParam(ctx, 'tenantId'),
  actor = ctx.state.actor ?? 'anonymous',
): CommandContext => ({
  tenantId,
  actor,
  correlationId: ctx.state.correlationId,
  causationId: ctx.state.requestId,
  now: deps.clock(),
  newEventId: () => crypto.randomUUID(),
  ...(ctx.state.beforeWrite ? { beforeWrite: ctx.state.beforeWrite } : {}),
});
