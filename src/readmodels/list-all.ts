import type { ReadModelStore, Scalar } from './port.js';

/**
 * Every document of a partition in ascending order of a field, read a page at a time (a list call has a
 * limit; the stores keep their pages small), for the few readers that need them all: a digest's stream
 * heads, the CLI's list of builds.
 */
export const listAll = async <Doc extends { id: string }, Field extends keyof Doc & string>(
  readModels: Pick<ReadModelStore, 'list'>,
  collection: string,
  { tenantId, sortField, pageSize }: { tenantId: string; sortField: Field; pageSize: number },
): Promise<Doc[]> => {
  const all: Doc[] = [];
  for (let after: { value: Scalar; id: string } | undefined; ;) {
    const page = await readModels.list<Doc>(collection, {
      tenantId,
      filters: [],
      sort: { field: sortField, direction: 'asc' },
      limit: pageSize,
      ...(after ? { after } : {}),
    });
    all.push(...page);
    const last = page.at(-1);
    if (!last || page.length < pageSize) return all;
    after = { value: last[sortField] as Scalar, id: last.id };
  }
};
