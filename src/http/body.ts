import type { Context } from 'koa';
import getRawBody from 'raw-body';
import { UnsupportedMediaTypeError, ValidationError } from '../core/errors.js';

/**
 * Reads a JSON body: refuses other media types with 415, bodies over the limit with 413 (raw-body checks
 * Content-Length before reading, and counts bytes while reading), and malformed JSON with 400.
 */
export const readJsonBody = async (
  ctx: Context,
  { limit, mediaTypes = ['application/json'] }: { limit: number; mediaTypes?: readonly string[] },
): Promise<unknown> => {
  const type = ctx.request.type; // the media type without parameters, lower-cased
  if (!mediaTypes.includes(type)) {
    throw new UnsupportedMediaTypeError(
      `Send the body as ${mediaTypes.join(' or ')}${type ? `, not ${type}` : '; Content-Type is missing'}`,
    );
  }
  const encoding = ctx.get('Content-Encoding').toLowerCase();
  if (encoding && encoding !== 'identity') {
    throw new UnsupportedMediaTypeError(
      `Content-Encoding ${encoding} is not supported; send the body uncompressed`,
    );
  }
  const charset = ctx.request.charset || 'utf-8';
  if (charset.toLowerCase() !== 'utf-8' && charset.toLowerCase() !== 'utf8') {
    throw new UnsupportedMediaTypeError(`JSON bodies must be UTF-8, not ${charset}`);
  }
  const text = await getRawBody(ctx.req, {
    length: ctx.get('Content-Length') || undefined,
    limit,
    encoding: 'utf-8',
  });
  try {
    return JSON.parse(text) as unknown;
  } catch (error) {
    throw new ValidationError([{ path: '', message: `is not valid JSON: ${(error as Error).message}` }]);
  }
};
