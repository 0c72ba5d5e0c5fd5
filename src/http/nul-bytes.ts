import type { Middleware } from 'koa';
import { NotFoundError, ValidationError } from '../core/errors.js';

/**
 * U+0000 names nothing: no id holds it, and PostgreSQL's text has no place for it (a query carrying one
 * fails in the driver). So a path that holds one is a 404 and a query parameter that holds one a 400, the
 * same on every backend, before any route or store sees them. JSON bodies may carry it in free text.
 */
export const refuseNulBytes = (): Middleware => async (ctx, next) => {
  if (/%00/.test(ctx.path) || ctx.path.includes('\u0000'))
    throw new NotFoundError('No resource has this path');
  if (ctx.querystring.includes('%00') || ctx.querystring.includes('\u0000')) {
    const names = Object.entries(ctx.query)
      .filter(([, value]) => [value ?? ''].flat().some((text) => text.includes('\u0000')))
      .map(([name]) => name);
    throw new ValidationError(
      (names.length > 0 ? names : ['']).map((path) => ({ path, message: 'must not contain U+0000' })),
    );
  }
  await next();
};
