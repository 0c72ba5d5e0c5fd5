import Router from '@koa/router';
import type { Context } from 'koa';
import { LRUCache } from 'lru-cache';
import { readWriteGuards, type Authenticator } from '../http/guard.js';
import { handleCommand, readAggregate } from '../core/command-handler.js';
import { NotFoundError, UnsupportedMediaTypeError, VersionConflictError } from '../core/errors.js';
import type { Clock } from '../core/ids.js';
import { streamName } from '../core/streams.js';
import type { EventStore } from '../eventstore/port.js';
import { commandContext } from '../http/command-context.js';
import { readRawBody } from '../http/body.js';
import { pathParam } from '../http/resource.js';
import { observationDecider, observationOf } from '../observations/decider.js';
import type { ObservationMedia } from '../observations/observation.js';
import type { BlobStore } from './blob-store.js';
import type { DecodeQueue } from './decode-queue.js';
import { mediaIdOf, sha256Of } from './hash.js';
import type { DecodeLimits } from './header.js';
import { inspect, verify, type MeasuredImage } from './images.js';
import { decodeOrThrow } from '../http/codec.js';
import {
  renderThumbnail,
  thumbnailCache,
  thumbnailETag,
  thumbnailWidthOf,
  ThumbnailQuery,
} from './thumbnails.js';

export interface MediaApiDeps {
  eventStore: EventStore;
  blobs: BlobStore;
  clock: Clock;
  auth: Authenticator;
  /** The largest image body accepted, in bytes (MEDIA_MAX_BYTES). */
  mediaMaxBytes: number;
  /** The decode budget (MEDIA_MAX_PIXELS, MEDIA_MAX_DECODED_BYTES). */
  decodeLimits: DecodeLimits;
  /** The process's decode queue, shared with the CV worker (MEDIA_DECODE_CONCURRENCY, MEDIA_DECODE_QUEUE). */
  decodes: DecodeQueue;
}

/** Measurements of images this process stored lately, per tenant, so the same bytes are not decoded again. */
const rememberedImages = 10_000;

/** Blobs never change under their hash: caches may keep them for a year without asking again. */
const immutable = 'private, max-age=31536000, immutable';

/** The whole body as bytes: 413 over the limit (from Content-Length before reading, or while reading). */
const readImageBody = async (ctx: Context, limit: number): Promise<Buffer> => {
  const encoding = ctx.get('Content-Encoding').toLowerCase();
  if (encoding && encoding !== 'identity') {
    throw new UnsupportedMediaTypeError(
      `Content-Encoding ${encoding} is not supported; send the image uncompressed`,
    );
  }
  // The bytes the idempotency middleware buffered, when the request has an Idempotency-Key.
  return readRawBody(ctx, limit);
};

/**
 * Attaching commutes with every other observation command, so a lost race is retried on the new state
 * rather than answered 409: a client uploading several photos at once gets them all attached.
 */
const attachRetrying = async <T>(attach: () => Promise<T>, attempts = 5): Promise<T> => {
  for (let attempt = 1; ; attempt++) {
    try {
      return await attach();
    } catch (error) {
      if (!(error instanceof VersionConflictError) || attempt >= attempts) throw error;
    }
  }
};

/** Whether an If-None-Match header names this strong ETag (weak comparison, as RFC 9110 asks for GET). */
const noneMatch = (header: string, etag: string): boolean =>
  header.trim() === '*' ||
  header
    .split(',')
    .map((tag) => tag.trim().replace(/^W\//, ''))
    .includes(etag);

/** Aborted when the client goes away before its answer is written, so its turn in the queue is given up. */
const clientGone = (ctx: Context): AbortSignal => {
  const controller = new AbortController();
  ctx.res.once('close', () => {
    if (!ctx.res.writableFinished) controller.abort(new Error('the client went away'));
  });
  return controller.signal;
};

/**
 * Images of an observation. The type is sniffed from the bytes and the header checked against the decode
 * budget before anything is decoded; bytes already attached to the observation, or measured lately in the
 * tenant, are not decoded again; others are decoded in full, in the decode queue, before anything is
 * stored. The blob is stored before the event that points at it, so a failure in between leaves at most an
 * unreferenced blob, never a medium without its bytes.
 */
export const mediaApi = (deps: MediaApiDeps): Router => {
  const router = new Router({ prefix: '/v1/tenants/:tenantId/observations/:id/media' });
  const { read, write } = readWriteGuards(deps.auth, 'observations');
  const stream = (ctx: Context) =>
    streamName('observation', pathParam(ctx, 'tenantId'), pathParam(ctx, 'id'));
  const location = (ctx: Context, mediaId: string) =>
    `/v1/tenants/${pathParam(ctx, 'tenantId')}/observations/${pathParam(ctx, 'id')}/media/${mediaId}`;

  // Keyed by tenant and SHA-256: another tenant's uploads must not make this one's faster (an oracle).
  const measured = new LRUCache<string, MeasuredImage>({ max: rememberedImages });
  const remember = (key: string, image: MeasuredImage) => {
    measured.set(key, image);
  };

  router.post('/', write, async (ctx) => {
    // An unknown observation is a 404 before the body is read, decoded or stored.
    const current = observationOf(
      (await readAggregate(deps.eventStore, observationDecider, stream(ctx))).state,
    );
    const bytes = await readImageBody(ctx, deps.mediaMaxBytes);
    // 415 or 413 from the header alone, before the queue: a bomb never waits for, nor takes, a decode slot.
    const header = inspect(bytes, deps.decodeLimits);
    const sha256 = sha256Of(bytes);
    const mediaId = mediaIdOf(sha256);
    const attached = current.media.find((item) => item.id === mediaId);
    if (attached) {
      // The same bytes again are the medium already attached: its blob is stored, its size measured.
      ctx.set('Location', location(ctx, mediaId));
      ctx.status = 200;
      ctx.body = attached satisfies ObservationMedia;
      return;
    }
    const key = `${pathParam(ctx, 'tenantId')}/${sha256}`;
    const { contentType, width, height } =
      measured.get(key) ??
      (await deps.decodes.upload(() => verify(bytes, header, deps.decodeLimits), clientGone(ctx)));
    await deps.blobs.put(sha256, bytes, contentType);
    remember(key, { contentType, width, height });
    const attach = () =>
      handleCommand(
        deps.eventStore,
        observationDecider,
        stream(ctx),
        {
          type: 'AttachMedia',
          media: { id: mediaId, sha256, contentType, size: bytes.length, width, height },
        },
        commandContext(ctx, deps),
      );
    const result = await attachRetrying(attach);
    const media = observationOf(result.state).media.find((item) => item.id === mediaId)!;
    ctx.set('Location', location(ctx, mediaId));
    if (result.position !== null) ctx.set('X-Position', String(result.position));
    // The same bytes again are the medium already attached.
    ctx.status = result.events.length > 0 ? 201 : 200;
    ctx.body = media satisfies ObservationMedia;
  });

  const mediaOf = async (ctx: Context): Promise<ObservationMedia> => {
    const { state } = await readAggregate(deps.eventStore, observationDecider, stream(ctx));
    const mediaId = pathParam(ctx, 'mediaId');
    const media = observationOf(state).media.find((item) => item.id === mediaId);
    if (!media) throw new NotFoundError('The observation has no such medium');
    return media;
  };
  const blobOf = async (media: ObservationMedia): Promise<Buffer> => {
    const bytes = await deps.blobs.get(media.sha256);
    // The blob is stored before its event: a missing one is a broken store, not a client error.
    if (!bytes) throw new Error(`The blob ${media.sha256} of medium ${media.id} is missing`);
    return bytes;
  };

  const thumbnails = thumbnailCache();
  router.get('/:mediaId/thumbnail', read, async (ctx) => {
    // An unsupported width is a 400 before the observation is read.
    const width = thumbnailWidthOf(decodeOrThrow(ThumbnailQuery, ctx.query));
    const media = await mediaOf(ctx);
    const etag = thumbnailETag(media, width);
    ctx.set('ETag', etag);
    ctx.set('Cache-Control', immutable);
    if (noneMatch(ctx.get('If-None-Match'), etag)) {
      ctx.status = 304;
      return;
    }
    const key = `${pathParam(ctx, 'tenantId')}/${media.sha256}/${width}`;
    let thumbnail = thumbnails.get(key);
    if (!thumbnail) {
      const bytes = await blobOf(media);
      thumbnail = await deps.decodes.upload(
        () => renderThumbnail(bytes, width, deps.decodeLimits),
        clientGone(ctx),
      );
      thumbnails.set(key, thumbnail);
    }
    ctx.status = 200;
    ctx.type = 'image/webp';
    ctx.set('X-Content-Type-Options', 'nosniff');
    ctx.body = thumbnail;
  });

  router.get('/:mediaId', read, async (ctx) => {
    const media = await mediaOf(ctx);
    const etag = `"${media.sha256}"`;
    ctx.set('ETag', etag);
    ctx.set('Cache-Control', immutable);
    if (noneMatch(ctx.get('If-None-Match'), etag)) {
      ctx.status = 304;
      return;
    }
    const bytes = await blobOf(media);
    ctx.status = 200;
    ctx.type = media.contentType;
    ctx.set('X-Content-Type-Options', 'nosniff');
    ctx.body = bytes;
  });

  return router;
};
