import sharp, { type Metadata } from 'sharp';
import { PayloadTooLargeError, UnsupportedMediaTypeError } from '../core/errors.js';
import type { MediaContentType } from '../observations/observation.js';
import {
  defaultDecodeLimits,
  overBudget,
  readHeader,
  type DecodeLimits,
  type ImageHeader,
} from './header.js';

/**
 * What an uploaded image is, decided from its bytes alone: the Content-Type a client sends is never
 * trusted. `sniff` reads the magic numbers and `inspect` the header, against the decode budget; `verify`
 * then has sharp (libvips) decode every row, so a file that only starts like an image (a truncated JPEG, a
 * corrupt PNG) is refused before anything is stored, and its width and height come from the decoder.
 */

const startsWith = (bytes: Uint8Array, signature: readonly number[], offset = 0): boolean =>
  bytes.length >= offset + signature.length && signature.every((byte, i) => bytes[offset + i] === byte);

const ascii = (text: string): number[] => [...text].map((c) => c.charCodeAt(0));

/** The image type the bytes announce by their magic number, or null when they are none of ours. */
export const sniff = (bytes: Uint8Array): MediaContentType | null => {
  // JPEG: SOI marker followed by the start of another marker.
  if (startsWith(bytes, [0xff, 0xd8, 0xff])) return 'image/jpeg';
  // PNG: the eight-byte signature.
  if (startsWith(bytes, [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a])) return 'image/png';
  // WebP: a RIFF container whose form type is WEBP.
  if (startsWith(bytes, ascii('RIFF')) && startsWith(bytes, ascii('WEBP'), 8)) return 'image/webp';
  return null;
};

/**
 * Whether a PNG's chunks run, whole, up to its IEND chunk. libpng decodes a file cut inside or just before
 * IEND without complaint, since the pixels are all there; a file cut short is refused all the same.
 */
const pngComplete = (bytes: Uint8Array): boolean => {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  let offset = 8;
  while (offset + 12 <= bytes.length) {
    const length = view.getUint32(offset);
    const end = offset + 12 + length;
    if (end > bytes.length) return false;
    if (String.fromCharCode(...bytes.subarray(offset + 4, offset + 8)) === 'IEND') return true;
    offset = end;
  }
  return false;
};

/** sharp's format names for the types we accept. */
const sharpFormat: Record<MediaContentType, string> = {
  'image/jpeg': 'jpeg',
  'image/png': 'png',
  'image/webp': 'webp',
};

export interface MeasuredImage {
  contentType: MediaContentType;
  width: number;
  height: number;
}

const refused = (detail: string) =>
  new UnsupportedMediaTypeError(`${detail}; send a complete JPEG, PNG or WebP image`);

/**
 * Reads the type from the magic number and the header in JavaScript, and checks the decode budget: no
 * decoder runs, so an image bomb is refused in microseconds, without waiting for the decode queue.
 * Throws `UnsupportedMediaTypeError` (415) for bytes that are not a JPEG, PNG or WebP with a readable
 * header, and `PayloadTooLargeError` (413) for an image over the budget.
 */
export const inspect = (bytes: Buffer, limits: DecodeLimits = defaultDecodeLimits): ImageHeader => {
  const contentType = sniff(bytes);
  if (!contentType) throw refused('The body is not an image of a supported type');
  const header = readHeader(bytes, contentType);
  if (!header || !header.width || !header.height) {
    throw refused(`The ${sharpFormat[contentType].toUpperCase()} image has no readable header`);
  }
  const over = overBudget(header, limits);
  if (over) throw new PayloadTooLargeError(over);
  return header;
};

/**
 * What the check decodes to. JPEG and PNG are read row by row, each row shrunk to one pixel. libvips reads
 * a WebP frame whole, though, so a 1.6 KB WebP within the budget held 300 MB while it was checked; shrunk
 * to one pixel it is decoded by libwebp at that scale, every block still read (a corrupt or truncated file
 * is refused alike), in about 20 MB.
 */
const checkedDecodeTarget = (contentType: MediaContentType, height: number) =>
  contentType === 'image/webp' ? { width: 1, height: 1 } : { width: 1, height };

/**
 * Has sharp (libvips) read the header again and decode every row of the image, so that a truncated or
 * corrupt body is refused (415) before anything is stored; width and height are the decoder's. The decode
 * is streamed row by row, each row shrunk to one pixel as it is read, so it holds a few rows, not the whole
 * image; and sharp refuses an image with more pixels than the header declared. Run it in the decode queue.
 */
export const verify = async (
  bytes: Buffer,
  header: ImageHeader,
  limits: DecodeLimits = defaultDecodeLimits,
): Promise<MeasuredImage> => {
  const { contentType } = header;
  // failOn 'truncated': a file cut short is refused; lesser decoder warnings (common in camera JPEGs) are not.
  const open = () =>
    sharp(bytes, {
      failOn: 'truncated',
      limitInputPixels: header.width * header.height,
      sequentialRead: true,
    });
  let metadata: Metadata;
  try {
    metadata = await open().metadata();
  } catch (error) {
    throw refused(
      `The ${sharpFormat[contentType].toUpperCase()} image cannot be decoded (${(error as Error).message})`,
    );
  }
  if (metadata.format !== sharpFormat[contentType]) {
    throw refused(`The body starts like ${contentType} but decodes as ${metadata.format}`);
  }
  const { width, height } = metadata;
  if (!width || !height) throw refused('The image has no size');
  // The decoder's own account of the budget, in case it reads the header otherwise than readHeader does.
  const over = overBudget(
    {
      ...header,
      width,
      height,
      channels: metadata.channels,
      bitsPerSample: metadata.depth === 'uchar' || metadata.depth === 'char' ? 8 : 16,
    },
    limits,
  );
  if (over) throw new PayloadTooLargeError(over);
  try {
    await open()
      .resize({ ...checkedDecodeTarget(contentType, height), fit: 'fill' })
      .raw()
      .toBuffer();
  } catch (error) {
    const message = (error as Error).message;
    if (/pixel limit/i.test(message)) {
      throw refused(`The image has more pixels than its header declares (${message})`);
    }
    throw refused(`The ${sharpFormat[contentType].toUpperCase()} image cannot be decoded (${message})`);
  }
  if (contentType === 'image/png' && !pngComplete(bytes)) {
    throw refused('The PNG image is truncated: it does not end with an IEND chunk');
  }
  return { contentType, width, height };
};

/** `inspect`, then `verify`: the whole check of an upload, outside any queue (tests, tools). */
export const measure = async (bytes: Buffer, limits: Partial<DecodeLimits> = {}): Promise<MeasuredImage> => {
  const budget = { ...defaultDecodeLimits, ...limits };
  return verify(bytes, inspect(bytes, budget), budget);
};
