import type { Context } from 'koa';
import type { ProjectionHandle } from '../readmodels/handles.js';
import { awaitPosition } from './consistency.js';
import type { ListQuery, ReadModelStore } from '../readmodels/port.js';
import type { CursorCodec } from './cursor.js';
import { singleParam, strictObject, wholeNumberParam } from './codec.js';

/**
 * One page of a list, as the JSON text of `{data, nextCursor}`: the documents go out as the store holds
 * them, never parsed and re-serialized. It asks for one document more than the limit to learn whether
 * there is a next page, and signs a cursor bound to the list: its collection, its tenant (the path's, or
 * the platform partition), its filters and its sort. Tenant A's cursor on tenant B's list is refused.
 */
export const listPage = async (
  deps: { readModels: ReadModelStore; cursors: CursorCodec },
  collection: string,
  query: Omit<ListQuery, 'limit' | 'after'>,
  { limit, cursor }: { limit: number; cursor: string | undefined },
): Promise<string> => {
  const queryKey = JSON.stringify([collection, query.tenantId, query.filters, query.sort]);
  const after = cursor === undefined ? undefined : deps.cursors.decode(cursor, queryKey);
  const rows = await deps.readModels.listJson(collection, {
    ...query,
    limit: limit + 1,
    ...(after ? { after } : {}),
  });
  const page = rows.slice(0, limit);
  const last = page.at(-1);
  const nextCursor =
    rows.length > limit && last
      ? deps.cursors.encode({ value: last.sortValue, id: last.id }, queryKey)
      : null;
  return `{"data":[${page.map((row) => row.json).join(',')}],"nextCursor":${JSON.stringify(nextCursor)}}`;
};

/** Sends a page from listPage as the JSON it already is. */
export const sendPage = (ctx: Context, page: string): void => {
  ctx.type = 'application/json';
  ctx.body = page;
};

/** The paging parameters every list takes. */
export const pageParams = {
  limit: wholeNumberParam(1, 200),
  cursor: singleParam(
    'a cursor',
    (s) => (s.length > 0 && s.length <= 1024 ? s : undefined),
    'must be a cursor from nextCursor',
  ),
};

/** The query of a list that takes nothing but paging. */
export const ListParams = strictObject('list parameters', {}, pageParams);

/**
 * A list route's answer from a projection: waits for the caller's `minPosition` (read-your-writes), sends
 * one page, and says in X-Projection-Position how far the projection has got.
 */
export const sendProjectedPage = async (
  ctx: Context,
  deps: { readModels: ReadModelStore; cursors: CursorCodec; consistencyTimeoutMs: number },
  { projection, runner }: ProjectionHandle<unknown>,
  query: Omit<ListQuery, 'limit' | 'after'>,
  params: { minPosition?: number; limit?: number; cursor?: string },
): Promise<void> => {
  await awaitPosition(runner, params.minPosition, deps.consistencyTimeoutMs);
  const page = await listPage(deps, projection.collection.name, query, {
    limit: params.limit ?? 50,
    cursor: params.cursor,
  });
  ctx.set('X-Projection-Position', String(runner.status().checkpoint));
  sendPage(ctx, page);
};
