import { createHmac, timingSafeEqual } from 'node:crypto';
import { ValidationError } from '../core/errors.js';
import type { Scalar } from '../readmodels/port.js';

/**
 * Opaque keyset cursors: the last (sort value, id) of a page, bound to the query that produced it (the
 * caller's key names the list, its tenant, its filters and its sort) and signed, so a cursor that was
 * edited, made up, or replayed against another tenant's list or other filters is refused with 400 instead
 * of silently paging through something else.
 */
export interface CursorPosition {
  value: Scalar | null;
  id: string;
}

const invalid = () =>
  new ValidationError([{ path: 'cursor', message: 'is not a cursor this service issued for this query' }]);

export const cursorCodec = (secret: string) => {
  const sign = (payload: string) => createHmac('sha256', secret).update(payload).digest().subarray(0, 16);

  return {
    encode: (position: CursorPosition, query: string): string => {
      const payload = Buffer.from(JSON.stringify({ v: position.value, i: position.id, q: query })).toString(
        'base64url',
      );
      return `${payload}.${sign(payload).toString('base64url')}`;
    },

    decode: (cursor: string, query: string): CursorPosition => {
      const [payload, signature, extra] = cursor.split('.');
      if (!payload || !signature || extra !== undefined) throw invalid();
      const expected = sign(payload);
      const given = Buffer.from(signature, 'base64url');
      if (given.length !== expected.length || !timingSafeEqual(given, expected)) throw invalid();
      const parsed = JSON.parse(Buffer.from(payload, 'base64url').toString()) as {
        v: Scalar | null;
        i: string;
        q: string;
      };
      if (parsed.q !== query) {
        throw new ValidationError([
          {
            path: 'cursor',
            message: 'belongs to another list: other filters or sorting, another tenant or route',
          },
        ]);
      }
      return { value: parsed.v, id: parsed.i };
    },
  };
};

export type CursorCodec = ReturnType<typeof cursorCodec>;
