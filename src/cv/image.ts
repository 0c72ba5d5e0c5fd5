import sharp from 'sharp';
import { readHeader, type ImageHeader } from '../media/header.js';
import { sniff } from '../media/images.js';
import { CvModelError } from './models/port.js';

/** A decoded single-channel (luminance) image: one byte per pixel, row by row from the top-left corner. */
export interface GreyImage {
  data: Buffer;
  width: number;
  height: number;
  /** The size of the image as displayed (EXIF orientation applied), before any downscaling. */
  original: { width: number; height: number };
}

const unreadable = (detail: string) =>
  new CvModelError('media_unreadable', `The image cannot be decoded: ${detail}`);

/**
 * The header of stored bytes, read in JavaScript: the size, channels, bits and orientation the decoder will
 * find, without asking the decoder (src/media/header.ts). Fails with `media_unreadable` when there is none.
 */
export const storedHeader = (image: Buffer): ImageHeader => {
  const contentType = sniff(image);
  const header = contentType ? readHeader(image, contentType) : null;
  if (!header || !header.width || !header.height)
    throw unreadable('it has no readable JPEG, PNG or WebP header');
  return header;
};

const throwIfAborted = (signal: AbortSignal | undefined) => {
  if (signal?.aborted) throw signal.reason ?? new Error('aborted');
};

/**
 * Decodes the stored bytes into luminance, oriented as displayed, scaled down to fit `maxSide` × `maxSide`
 * (never up), optionally blurred with a Gaussian of `blurSigma` pixels. A truncated or corrupt image, or
 * bytes that are no image at all, fail with `media_unreadable`: sharp is told to fail on truncation rather
 * than hand back a half-grey picture. The size as displayed comes from the header (`storedHeader`), not
 * from a second call to the decoder, and sharp refuses more pixels than the header declares. Checking the
 * decode budget and queueing the decode are the caller's part (src/cv/worker.ts).
 */
export const decodeGrey = async (
  image: Buffer,
  { maxSide, blurSigma, signal }: { maxSide: number; blurSigma?: number; signal?: AbortSignal },
): Promise<GreyImage> => {
  throwIfAborted(signal);
  const header = storedHeader(image);
  try {
    let pipeline = sharp(image, { failOn: 'truncated', limitInputPixels: header.width * header.height })
      .rotate()
      .flatten({ background: '#ffffff' })
      .greyscale()
      .resize({ width: maxSide, height: maxSide, fit: 'inside', withoutEnlargement: true });
    if (blurSigma !== undefined && blurSigma >= 0.3) pipeline = pipeline.blur(blurSigma);
    const { data, info } = await pipeline.raw().toBuffer({ resolveWithObject: true });
    throwIfAborted(signal);
    const original = displayedSize(header);
    if (info.channels === 1) return { data, width: info.width, height: info.height, original };
    // Defensive: keep the first channel if sharp handed back more than one.
    const grey = Buffer.alloc(info.width * info.height);
    for (let i = 0; i < grey.length; i += 1) grey[i] = data[i * info.channels]!;
    return { data: grey, width: info.width, height: info.height, original };
  } catch (error) {
    if (signal?.aborted) throw error;
    throw unreadable((error as Error).message.split('\n')[0]!);
  }
};

/** The size of the image as displayed: the header's, turned by its EXIF orientation. */
export const displayedSize = (header: ImageHeader): { width: number; height: number } =>
  header.orientation >= 5
    ? { width: header.height, height: header.width }
    : { width: header.width, height: header.height };

/** Fails with `media_unreadable` unless the bytes decode completely (what remote models are sent). */
export const assertDecodable = async (image: Buffer, signal?: AbortSignal): Promise<void> => {
  await decodeGrey(image, { maxSide: 64, ...(signal ? { signal } : {}) });
};

/** Rounds to `digits` decimals, for results that read well and compare exactly. */
export const round = (value: number, digits = 4): number => {
  const factor = 10 ** digits;
  return Math.round(value * factor) / factor;
};
