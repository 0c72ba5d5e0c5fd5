import type { ListQuery, ReadModelStore, Scalar } from '../readmodels/port.js';
import type { CursorCodec } from './cursor.js';
import { singleParam, strictObject, wholeNumberParam } from './codec.js';

/**
 * One page of a list: asks the store for one document more than the limit to learn whether there is a
 * next page, and signs a cursor bound to the query's filters and sort.
 */
export const listPage = async <D extends { id: string }>(
  deps: { readModels: ReadModelStore; cursors: CursorCodec },
  collection: string,
  query: Omit<ListQuery, 'limit' | 'after'>,
  { limit, cursor }: { limit: number; cursor: string | undefined },
  sortValue: (doc: D) => Scalar | null,
): Promise<{ data: D[]; nextCursor: string | null }> => {
  const queryKey = JSON.stringify([collection, query.filters, query.sort]);
  const after = cursor === undefined ? undefined : deps.cursors.decode(cursor, queryKey);
  const rows = await deps.readModels.list<D>(collection, {
    ...query,
    limit: limit + 1,
    ...(after ? { after } : {}),
  });
  const data = rows.slice(0, limit);
  const last = data.at(-1);
  const nextCursor =
    rows.length > limit && last
      ? deps.cursors.encode({ value: sortValue(last), id: last.id }, queryKey)
      : null;
  return { data, nextCursor };
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
