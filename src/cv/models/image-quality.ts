import { decodeGrey, round } from '../image.js';
import type { CvModel, ModelResult } from './port.js';

/**
 * Is the photo good enough to look at? Classical measures over the luminance, no learned weights:
 * - sharpness: the variance of the Laplacian (4-neighbour kernel); edges make it large, blur makes it small;
 * - exposure: the mean luminance, 0 (black) to 255 (white);
 * - clipping: the fraction of pixels at exactly 0 or 255, where detail is lost;
 * - resolution: the image's size as displayed.
 * Measured on the image scaled to fit 1024 × 1024, so the figures do not depend on the camera's size.
 */
export const imageQualityThresholds = {
  /** Below this Laplacian variance the image is `blurry`. */
  minSharpness: 100,
  /** Mean luminance below this is `underexposed`, above `maxMeanLuminance` `overexposed`. */
  minMeanLuminance: 40,
  maxMeanLuminance: 215,
  /** More than this fraction of pixels at 0 or 255 is `clipped`. */
  maxClipping: 0.25,
  /** A shorter side below this many pixels is `low_resolution`. */
  minShortSide: 240,
} as const;

const analysisSide = 1024;

export type QualityReason = 'blurry' | 'underexposed' | 'overexposed' | 'clipped' | 'low_resolution';

/** Variance of the 4-neighbour Laplacian over the interior pixels. */
export const laplacianVariance = (data: Uint8Array, width: number, height: number): number => {
  if (width < 3 || height < 3) return 0;
  let sum = 0;
  let sumSquares = 0;
  for (let y = 1; y < height - 1; y += 1) {
    const row = y * width;
    for (let x = 1; x < width - 1; x += 1) {
      const i = row + x;
      const value = data[i - width]! + data[i + width]! + data[i - 1]! + data[i + 1]! - 4 * data[i]!;
      sum += value;
      sumSquares += value * value;
    }
  }
  const n = (width - 2) * (height - 2);
  const mean = sum / n;
  return sumSquares / n - mean * mean;
};

export const imageQuality: CvModel = {
  name: 'image-quality',
  kind: 'builtin',
  description:
    'Sharpness (variance of the Laplacian), exposure (mean luminance), clipping and resolution, with a usable/unusable verdict and its reasons. Finds no objects.',
  returns: {
    detections: 'always empty',
    summary: {
      usable: 'true when no reason below applies',
      reasons: `what makes it unusable: blurry (sharpness < ${imageQualityThresholds.minSharpness}), underexposed (mean luminance < ${imageQualityThresholds.minMeanLuminance}), overexposed (> ${imageQualityThresholds.maxMeanLuminance}), clipped (more than ${imageQualityThresholds.maxClipping * 100}% of pixels at 0 or 255), low_resolution (shorter side < ${imageQualityThresholds.minShortSide} px)`,
      sharpness: 'variance of the Laplacian of the luminance, on the image scaled to fit 1024 × 1024',
      meanLuminance: 'mean luminance, 0 (black) to 255 (white)',
      clipping: '{dark, bright, total}: fractions of pixels at 0, at 255, and either',
      resolution: '{width, height, megapixels} of the image as displayed',
    },
  },
  run: async (image, { signal, decode }): Promise<ModelResult> => {
    const grey = await decode(() => decodeGrey(image, { maxSide: analysisSide, signal }));
    const { data, width, height, original } = grey;
    let sum = 0;
    let dark = 0;
    let bright = 0;
    for (let i = 0; i < data.length; i += 1) {
      const value = data[i]!;
      sum += value;
      if (value === 0) dark += 1;
      else if (value === 255) bright += 1;
    }
    const pixels = data.length;
    const sharpness = laplacianVariance(data, width, height);
    const meanLuminance = sum / pixels;
    const clipping = { dark: dark / pixels, bright: bright / pixels, total: (dark + bright) / pixels };
    const t = imageQualityThresholds;
    const reasons: QualityReason[] = [];
    if (sharpness < t.minSharpness) reasons.push('blurry');
    if (meanLuminance < t.minMeanLuminance) reasons.push('underexposed');
    if (meanLuminance > t.maxMeanLuminance) reasons.push('overexposed');
    if (clipping.total > t.maxClipping) reasons.push('clipped');
    if (Math.min(original.width, original.height) < t.minShortSide) reasons.push('low_resolution');
    return {
      detections: [],
      summary: {
        usable: reasons.length === 0,
        reasons,
        sharpness: round(sharpness, 2),
        meanLuminance: round(meanLuminance, 2),
        clipping: {
          dark: round(clipping.dark),
          bright: round(clipping.bright),
          total: round(clipping.total),
        },
        resolution: {
          width: original.width,
          height: original.height,
          megapixels: round((original.width * original.height) / 1e6, 3),
        },
      },
    };
  },
};
