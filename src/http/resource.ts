import type { Context } from 'koa';
import { readAggregate } from '../core/command-handler.js';
import type { Decider, DomainEvent } from '../core/decider.js';
import type { EventStore } from '../eventstore/port.js';

/** The ETag of an event-sourced resource is its stream version. */
export const etagOf = (version: number): string => `"${version}"`;

/**
 * If-Match as a stream version. `*` asks only that the resource exists, which the command checks anyway.
 * A value that is not one of our ETags can never match: -2 makes the precondition fail with 412.
 */
export const parseIfMatch = (header: string): number | undefined => {
  const value = header.trim();
  if (value === '' || value === '*') return undefined;
  const match = /^(?:W\/)?"(\d{1,15})"$/.exec(value);
  return match ? Number(match[1]) : -2;
};

/**
 * Writes a resource with its ETag. After a write, X-Position carries the global position of the last
 * event written: a list called with minPosition=<that> waits until its read model includes the write.
 */
export const sendResource = (
  ctx: Context,
  status: number,
  body: object,
  { version, position }: { version: number; position: number | null },
): void => {
  ctx.set('ETag', etagOf(version));
  if (position !== null) ctx.set('X-Position', String(position));
  if (status === 200 && ctx.method === 'GET' && ctx.get('If-None-Match') === etagOf(version)) {
    ctx.status = 304;
    return;
  }
  ctx.status = status;
  ctx.body = body;
};

/** A path parameter the router matched; the routes' patterns guarantee it is there. */
export const pathParam = (ctx: Context, name: string): string =>
  String((ctx.params as Record<string, string>)[name]);

/** GET of one aggregate: folded from its stream, so always current, with its stream version as ETag. */
export const sendAggregate = async <State, Event extends DomainEvent>(
  ctx: Context,
  eventStore: EventStore,
  decider: Pick<Decider<State, never, Event>, 'initialState' | 'evolve'>,
  streamName: string,
  resourceOf: (state: State) => object,
): Promise<void> => {
  const { state, version } = await readAggregate(eventStore, decider, streamName);
  sendResource(ctx, 200, resourceOf(state), { version, position: null });
};
