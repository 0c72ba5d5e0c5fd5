import { LRUCache } from 'lru-cache';
import sharp from 'sharp';
import * as t from 'io-ts';
import { paramOf, strictObject } from '../http/codec.js';
import type { ObservationMedia } from '../observations/observation.js';
import type { DecodeLimits } from './header.js';
import { inspect } from './images.js';

/**
 * Small WebP copies of an observation's images, for the rows of a list. The widths are a fixed set, so
 * that a client cannot make the service render (and cache) one image at a thousand sizes.
 */
export const thumbnailWidths = [160, 320, 640] as const;

export type ThumbnailWidth = (typeof thumbnailWidths)[number];

const WidthCodec = t.keyof(
  Object.fromEntries(thumbnailWidths.map((width) => [String(width), null])) as Record<
    `${ThumbnailWidth}`,
    null
  >,
  `one of ${thumbnailWidths.join(', ')}`,
);

/** `?width=`: one of the fixed widths, 160 when left out. */
export const ThumbnailQuery = strictObject('thumbnail parameters', {}, { width: paramOf(WidthCodec) });

export const thumbnailWidthOf = (params: t.TypeOf<typeof ThumbnailQuery>): ThumbnailWidth =>
  Number(params.width ?? thumbnailWidths[0]) as ThumbnailWidth;

/** The bytes under a media id never change, so neither does its thumbnail at one width. */
export const thumbnailETag = (media: Pick<ObservationMedia, 'sha256'>, width: ThumbnailWidth) =>
  `"${media.sha256}-w${width}"`;

/**
 * The thumbnail: the image turned upright by its EXIF orientation and shrunk to the width (never
 * enlarged). The decode is bounded as an upload's is: the header is checked against MEDIA_MAX_PIXELS and
 * MEDIA_MAX_DECODED_BYTES again, and sharp refuses more pixels than the header declared. JPEGs shrink on
 * load, so a thumbnail of a large photo decodes an eighth of it. Run it in the decode queue.
 */
export const renderThumbnail = async (
  bytes: Buffer,
  width: ThumbnailWidth,
  limits: DecodeLimits,
): Promise<Buffer> => {
  const header = inspect(bytes, limits);
  return sharp(bytes, { limitInputPixels: header.width * header.height, failOn: 'truncated' })
    .rotate()
    .resize({ width, withoutEnlargement: true })
    .webp({ quality: 70 })
    .toBuffer();
};

/** Thumbnails rendered lately, at most this many bytes of them. */
const cachedBytes = 32 * 1024 * 1024;

/** Keyed by tenant, SHA-256 and width: another tenant's views must not make this one's faster (an oracle). */
export const thumbnailCache = () =>
  new LRUCache<string, Buffer>({ maxSize: cachedBytes, sizeCalculation: (bytes) => bytes.length });
