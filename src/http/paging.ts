import type * as t from 'io-ts';
import type { Context, Middleware } from 'koa';
import type { ProjectionHandle } from '../readmodels/handles.js';
import { awaitPosition } from './consistency.js';
import { pathParam } from './resource.js';
import type { ListQuery, ReadModelStore } from '../readmodels/port.js';
import type { CursorCodec } from './cursor.js';
import { decodeOrThrow, singleParam, strictObject, wholeNumberParam } from './codec.js';

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

/** The page a list's parameters ask for: 50 documents unless they say otherwise. */
export const pageOf = (params: { limit?: number; cursor?: string }) => ({
  limit: params.limit ?? 50,
  cursor: params.cursor,
});

/**
 * The route of a list that takes nothing but paging, oldest first: `where` names its partition and
 * filters from the request.
 */
export const oldestFirstList =
  (
    deps: { readModels: ReadModelStore; cursors: CursorCodec },
    collection: string,
    where: (ctx: Context) => Pick<ListQuery, 'tenantId' | 'filters'>,
  ): Middleware =>
  async (ctx) => {
    const params = decodeOrThrow(ListParams, ctx.query);
    const query = { ...where(ctx), sort: { field: 'createdAt', direction: 'asc' as const } };
    sendPage(ctx, await listPage(deps, collection, query, pageOf(params)));
  };

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
  const page = await listPage(deps, projection.collection.name, query, pageOf(params));
  ctx.set('X-Projection-Position', String(runner.status().checkpoint));
  sendPage(ctx, page);
};

/**
 * The list route of a tenant's read model: its query string decoded by `codec`, turned into the read
 * model's query for the path's tenant by `toQuery`, and answered by sendProjectedPage.
 */
export const projectedList =
  <Params extends { minPosition?: number; limit?: number; cursor?: string }>(
    deps: { readModels: ReadModelStore; cursors: CursorCodec; consistencyTimeoutMs: number },
    handle: ProjectionHandle<unknown>,
    codec: t.Type<Params, unknown>,
    toQuery: (tenantId: string, params: Params) => Omit<ListQuery, 'limit' | 'after'>,
  ): Middleware =>
  async (ctx) => {
    const params = decodeOrThrow(codec, ctx.query);
    await sendProjectedPage(ctx, deps, handle, toQuery(pathParam(ctx, 'tenantId'), params), params);
  };
