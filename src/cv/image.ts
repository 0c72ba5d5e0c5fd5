import sharp from 'sharp';
import { CvModelError } from './models/port.js';

/** A decoded single-channel (luminance) image: one byte per pixel, row by row from the top-left corner. */
export interface GreyImage {
  data: Buffer;
  width: number;
  height: number;
  /** The size of the image as displayed (EXIF orientation applied), before any downscaling. */
  original: { width: number; height: number };
}

/** Larger inputs are refused rather than decoded: about 10,000 × 10,000 pixels. */
const maxInputPixels = 100_000_000;

const throwIfAborted = (signal: AbortSignal | undefined) => {
  if (signal?.aborted) throw signal.reason ?? new Error('aborted');
};

/**
 * Decodes the stored bytes into luminance, oriented as displayed, scaled down to fit `maxSide` × `maxSide`
 * (never up), optionally blurred with a Gaussian of `blurSigma` pixels. A truncated or corrupt image, or
 * bytes that are no image at all, fail with `media_unreadable`: sharp is told to fail on truncation rather
 * than hand back a half-grey picture.
 */
export const decodeGrey = async (
  image: Buffer,
  { maxSide, blurSigma, signal }: { maxSide: number; blurSigma?: number; signal?: AbortSignal },
): Promise<GreyImage> => {
  throwIfAborted(signal);
  try {
    let pipeline = sharp(image, { failOn: 'truncated', limitInputPixels: maxInputPixels })
      .rotate()
      .flatten({ background: '#ffffff' })
      .greyscale()
      .resize({ width: maxSide, height: maxSide, fit: 'inside', withoutEnlargement: true });
    if (blurSigma !== undefined && blurSigma >= 0.3) pipeline = pipeline.blur(blurSigma);
    const meta = await sharp(image, { limitInputPixels: maxInputPixels }).metadata();
    const { data, info } = await pipeline.raw().toBuffer({ resolveWithObject: true });
    throwIfAborted(signal);
    const rotated = (meta.orientation ?? 1) >= 5;
    const original = {
      width: (rotated ? meta.height : meta.width) ?? info.width,
      height: (rotated ? meta.width : meta.height) ?? info.height,
    };
    if (info.channels === 1) return { data, width: info.width, height: info.height, original };
    // Defensive: keep the first channel if sharp handed back more than one.
    const grey = Buffer.alloc(info.width * info.height);
    for (let i = 0; i < grey.length; i += 1) grey[i] = data[i * info.channels]!;
    return { data: grey, width: info.width, height: info.height, original };
  } catch (error) {
    if (signal?.aborted) throw error;
    throw new CvModelError(
      'media_unreadable',
      `The image cannot be decoded: ${(error as Error).message.split('\n')[0]}`,
    );
  }
};

/** Fails with `media_unreadable` unless the bytes decode completely (what remote models are sent). */
export const assertDecodable = async (image: Buffer, signal?: AbortSignal): Promise<void> => {
  await decodeGrey(image, { maxSide: 64, ...(signal ? { signal } : {}) });
};

/** Rounds to `digits` decimals, for results that read well and compare exactly. */
export const round = (value: number, digits = 4): number => {
  const factor = 10 ** digits;
  return Math.round(value * factor) / factor;
};
