import type { Context } from 'koa';
import type * as t from 'io-ts';
import getRawBody from 'raw-body';
import { UnsupportedMediaTypeError, ValidationError } from '../core/errors.js';
import { maxBodyDepth, maxBodyMembers, textBoundExceeded } from '../core/json-bounds.js';
import { decodeOrThrow } from './codec.js';

/** The error raw-body throws for a body over the limit: problem.ts answers it with 413. */
const tooLarge = (length: number, limit: number) =>
  Object.assign(new Error('request entity too large'), {
    status: 413,
    statusCode: 413,
    expose: true,
    type: 'entity.too.large',
    expected: length,
    length,
    limit,
  });

const withinLimit = (body: Buffer, limit: number): Buffer => {
  if (body.length > limit) throw tooLarge(body.length, limit);
  return body;
};

/** Like raw-body's UTF-8 decoding: a byte-order mark is dropped, invalid bytes become U+FFFD. */
const utf8 = new TextDecoder('utf-8');

/**
 * The body's bytes, up to `limit` (413 beyond): the copy the idempotency middleware buffered
 * (`ctx.state.rawBody`, see ./idempotency.ts) when there is one, otherwise read from the request.
 */
export const readRawBody = async (ctx: Context, limit: number): Promise<Buffer> => {
  const buffered = ctx.state.rawBody;
  if (buffered !== undefined) return withinLimit(buffered, limit);
  return getRawBody(ctx.req, { length: ctx.get('Content-Length') || undefined, limit });
};

/**
 * Reads a JSON body: refuses other media types with 415, bodies over the limit with 413 (raw-body checks
 * Content-Length before reading, and counts bytes while reading), and malformed JSON with 400. So does a
 * body nested deeper than maxBodyDepth: the text is measured before it is parsed, so nothing that walks the
 * value recursively (validation, merge patch, JSON.stringify) ever sees such depth.
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
  const buffered = ctx.state.rawBody;
  const text =
    buffered === undefined
      ? await getRawBody(ctx.req, {
          length: ctx.get('Content-Length') || undefined,
          limit,
          encoding: 'utf-8',
        })
      : utf8.decode(withinLimit(buffered, limit));
  const exceeded = textBoundExceeded(text, { maxDepth: maxBodyDepth, maxMembers: maxBodyMembers });
  if (exceeded) {
    const message =
      exceeded.bound === 'depth'
        ? `is nested more than ${maxBodyDepth} levels deep`
        : `holds more than ${maxBodyMembers} members and items in all`;
    throw new ValidationError([{ path: exceeded.field, message }]);
  }
  try {
    return JSON.parse(text) as unknown;
  } catch (error) {
    throw new ValidationError([{ path: '', message: `is not valid JSON: ${(error as Error).message}` }]);
  }
};

/** The media types a PATCH takes: a JSON Merge Patch (RFC 7396), or plain JSON meaning the same. */
export const mergePatchTypes = ['application/merge-patch+json', 'application/json'] as const;

/** Reads a PATCH body: a merge patch, within the body limit. */
export const readMergePatch = (ctx: Context, limit: number): Promise<unknown> =>
  readJsonBody(ctx, { limit, mediaTypes: mergePatchTypes });

/** A JSON body read as readJsonBody reads it, then decoded by the codec: 400 naming each bad field. */
export const decodedJsonBody = async <A, O>(
  ctx: Context,
  codec: t.Type<A, O, unknown>,
  limit: number,
): Promise<A> => decodeOrThrow(codec, await readJsonBody(ctx, { limit }));
