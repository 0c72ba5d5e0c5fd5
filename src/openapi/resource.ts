import { ListParams } from '../http/paging.js';
import { fields, page } from './components.js';
import { operation } from './operation.js';
import { integer, ref } from './schema.js';

/** Building blocks the features' operations share: the paging query of a list, and the read of one resource. */

/** `limit` and `cursor`, as every list takes them. */
export const pagingQuery = {
  codec: ListParams,
  parameters: {
    limit: {
      schema: { type: 'integer', format: 'int32', minimum: 1, maximum: 200, default: 50 },
      description: 'Page size',
      example: 20,
    },
    cursor: { schema: fields.cursor, description: 'The `nextCursor` of the previous page' },
  },
};

/** The 201 of a POST that creates a resource. */
export const createdResponse = (schema: string, description: string) => ({
  description,
  headers: ['Location', 'ETag', 'X-Position'] as const,
  content: { 'application/json': ref(schema) },
});

/** The 200 of a list: a page of the resource. */
export const pageResponse = (schema: string, description: string) => ({
  description: 'A page',
  content: { 'application/json': page(ref(schema), description) },
});

/** The 200 of a write that answers the resource as it now is. */
export const changedResponse = (schema: string, description: string) => ({
  description,
  headers: ['ETag', 'X-Position'] as const,
  content: { 'application/json': ref(schema) },
});

/** Read-your-writes for a list that reads a projection (src/http/consistency.ts). */
export const minPositionQuery = {
  schema: integer(0, Number.MAX_SAFE_INTEGER, { format: 'int64' }),
  description: 'Wait until the list includes the write with this X-Position',
};

/** GET of one resource folded from its stream, and the description of its id. */
export const readOne = ({
  path,
  one,
  schema,
  tag,
  read,
  example,
}: {
  path: string;
  one: string;
  schema: string;
  tag: string;
  read: 'locations:read' | 'observations:read';
  /** The id the examples use (exampleIds). */
  example: string;
}) => {
  const byId = { id: { description: `The ${one}'s id`, example } };
  return {
    byId,
    get: operation({
      method: 'get',
      path: `${path}/:id`,
      operationId: `get${schema}`,
      summary: `Read a ${one}`,
      tag,
      access: { scope: read },
      pathParameters: byId,
      headers: ['IfNoneMatch'],
      responses: {
        '200': { description: `The ${one}`, headers: ['ETag'], content: { 'application/json': ref(schema) } },
        '304': { description: 'Not modified', headers: ['ETag'] },
      },
    }),
  };
};
