import type { Context } from 'koa';
import { handleCommand, handleCreate, type CommandResult } from '../core/command-handler.js';
import type { Decider, DomainEvent } from '../core/decider.js';
import type { Clock } from '../core/ids.js';
import { streamName } from '../core/streams.js';
import type { EventStore } from '../eventstore/port.js';
import { commandContext } from './command-context.js';
import { parseIfMatch, pathParam, sendAggregate, sendResource } from './resource.js';

/**
 * What the routes of one event-sourced resource share: its stream, named by the path's tenant and `:id`;
 * its commands, run as the request's caller (under the request's If-Match where the resource takes one);
 * and its answers, the resource with its stream version as ETag and the position written as X-Position.
 * The routes keep their own bodies, guards and checks; this is only how they reach the aggregate.
 */
export const aggregateResource = <State, Command, Event extends DomainEvent>(
  deps: { eventStore: EventStore; clock: Clock },
  decider: Decider<State, Command, Event>,
  /** The resource a state holds; throws the 404 when it holds none. */
  resourceOf: (state: State) => object,
  /** Whether its changes honour If-Match (the OpenAPI operation declares the header). */
  { ifMatch = true }: { ifMatch?: boolean } = {},
) => {
  const stream = (ctx: Context, id = pathParam(ctx, 'id')) =>
    streamName(decider.aggregate, pathParam(ctx, 'tenantId'), id);
  /** The command on the resource the path names: If-Match, when it takes one, is the version expected. */
  const change = (ctx: Context, command: Command): Promise<CommandResult<State, Event>> =>
    handleCommand(
      deps.eventStore,
      decider,
      stream(ctx),
      command,
      commandContext(ctx, deps),
      ifMatch ? parseIfMatch(ctx.get('If-Match')) : undefined,
    );

  return {
    stream,

    /** GET of one: folded from its stream, so always current, whatever the lag of its list's projection. */
    read: (ctx: Context) => sendAggregate(ctx, deps.eventStore, decider, stream(ctx), resourceOf),

    /** POST of a new one, under the id the route drew: 201 (202 when only requested) with its Location. */
    create: async (
      ctx: Context,
      { id, location, status = 201 }: { id: string; location: string; status?: 201 | 202 },
      command: Command,
    ): Promise<void> => {
      const result = await handleCreate(
        deps.eventStore,
        decider,
        stream(ctx, id),
        command,
        commandContext(ctx, deps),
      );
      ctx.set('Location', location);
      sendResource(ctx, status, resourceOf(result.state), result);
    },

    /** A command that changes the one the path names (a patch, a submit): 200 with what it became. */
    change: async (ctx: Context, command: Command): Promise<void> => {
      const result = await change(ctx, command);
      sendResource(ctx, 200, resourceOf(result.state), result);
    },

    /** A command that ends it (a delete, a revoke): 204, with X-Position when it wrote an event. */
    remove: async (ctx: Context, command: Command): Promise<void> => {
      const result = await change(ctx, command);
      if (result.position !== null) ctx.set('X-Position', String(result.position));
      ctx.status = 204;
    },
  };
};
