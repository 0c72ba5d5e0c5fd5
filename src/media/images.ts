import sharp, { type Metadata } from 'sharp';
import { PayloadTooLargeError, UnsupportedMediaTypeError } from '../core/errors.js';
import type { MediaContentType } from '../observations/observation.js';

/**
 * What an uploaded image is, decided from its bytes alone: the Content-Type a client sends is never
 * trusted. `sniff` reads the magic numbers; `measure` then has sharp (libvips) decode the whole image, so
 * a file that only starts like an image (a truncated JPEG, a corrupt PNG) is refused before anything is
 * stored, and its width and height come from the decoder rather than from the client.
 */

export const mediaContentTypes: readonly MediaContentType[] = ['image/jpeg', 'image/png', 'image/webp'];

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

/** The largest image decoded, in pixels (width × height): 100 megapixels, far above any camera upload. */
export const defaultMaxPixels = 100_000_000;

export interface MeasuredImage {
  contentType: MediaContentType;
  width: number;
  height: number;
}

const refused = (detail: string) =>
  new UnsupportedMediaTypeError(`${detail}; send a complete JPEG, PNG or WebP image`);

/**
 * Sniffs the type and decodes the whole image. Throws `UnsupportedMediaTypeError` (415) for bytes that are
 * not a JPEG, PNG or WebP image sharp can read to the end, and `PayloadTooLargeError` (413) for an image
 * with more than `maxPixels` pixels (a small file can still decode to gigabytes).
 */
export const measure = async (
  bytes: Buffer,
  { maxPixels = defaultMaxPixels }: { maxPixels?: number } = {},
): Promise<MeasuredImage> => {
  const contentType = sniff(bytes);
  if (!contentType) throw refused('The body is not an image of a supported type');
  // failOn 'truncated': a file cut short is refused; lesser decoder warnings (common in camera JPEGs) are not.
  const open = () => sharp(bytes, { failOn: 'truncated', limitInputPixels: maxPixels });
  let metadata: Metadata;
  try {
    metadata = await open().metadata();
    // metadata() reads only the header: decode every pixel, so that a truncated or corrupt body fails here.
    await open().stats();
  } catch (error) {
    const message = (error as Error).message;
    if (/pixel limit/i.test(message)) {
      throw new PayloadTooLargeError(`The image has more than ${maxPixels} pixels`);
    }
    throw refused(`The ${sharpFormat[contentType].toUpperCase()} image cannot be decoded (${message})`);
  }
  if (metadata.format !== sharpFormat[contentType]) {
    throw refused(`The body starts like ${contentType} but decodes as ${metadata.format}`);
  }
  if (contentType === 'image/png' && !pngComplete(bytes)) {
    throw refused('The PNG image is truncated: it does not end with an IEND chunk');
  }
  const { width, height } = metadata;
  if (!width || !height) throw refused('The image has no size');
  return { contentType, width, height };
};
