import type { BoundingBox, Detection } from '../models/port.js';

/** A box a detector proposed, in corner form (x1, y1) top-left to (x2, y2) bottom-right, in any unit. */
export interface Candidate {
  classIndex: number;
  /** 0..1 */
  score: number;
  x1: number;
  y1: number;
  x2: number;
  y2: number;
}

/**
 * At most this many candidates, the highest scores, go into suppression: its cost grows with the square
 * of their number, and a model server's reply (src/cv/models/tensor.ts) may claim any number of boxes.
 */
export const maxCandidates = 3000;

const area = (c: Candidate) => Math.max(0, c.x2 - c.x1) * Math.max(0, c.y2 - c.y1);

/** Intersection over union of two boxes: 0 when apart, 1 when the same. */
export const intersectionOverUnion = (a: Candidate, b: Candidate): number => {
  const width = Math.min(a.x2, b.x2) - Math.max(a.x1, b.x1);
  const height = Math.min(a.y2, b.y2) - Math.max(a.y1, b.y1);
  if (width <= 0 || height <= 0) return 0;
  const overlap = width * height;
  return overlap / (area(a) + area(b) - overlap);
};

/**
 * Greedy non-maximum suppression per class: of boxes of one class that overlap by more than
 * `iouThreshold`, only the highest-scoring one is kept. Candidates below `minConfidence` are dropped first,
 * and the result, highest score first, holds at most `maxDetections`. A box never suppresses a box with a
 * higher score, so thresholding before or after suppression keeps the same boxes.
 */
export const nonMaxSuppression = (
  candidates: readonly Candidate[],
  {
    minConfidence,
    maxDetections,
    iouThreshold,
  }: { minConfidence: number; maxDetections: number; iouThreshold: number },
): Candidate[] => {
  const ranked = candidates
    .filter((c) => c.score >= minConfidence && area(c) > 0)
    .sort((a, b) => b.score - a.score)
    .slice(0, maxCandidates);
  const kept: Candidate[] = [];
  for (const candidate of ranked) {
    if (kept.length >= maxDetections) break;
    const suppressed = kept.some(
      (k) => k.classIndex === candidate.classIndex && intersectionOverUnion(k, candidate) > iouThreshold,
    );
    if (!suppressed) kept.push(candidate);
  }
  return kept;
};

const clamp01 = (value: number) => Math.min(1, Math.max(0, value));

/** Rounds to 4 decimals: a tenth of a pixel on a 1000-pixel side is more than a box's accuracy. */
const round4 = (value: number) => Math.round(value * 1e4) / 1e4;

/**
 * Kept candidates → the result's detections: the box relative to the image (0..1, clipped to it, since
 * detectors do draw boxes a little past the edge), and the class index named by `labels`.
 */
export const toDetections = (
  kept: readonly Candidate[],
  { width, height, labels }: { width: number; height: number; labels: readonly string[] },
): Detection[] =>
  kept.map((c) => {
    const x1 = clamp01(c.x1 / width);
    const y1 = clamp01(c.y1 / height);
    const bbox: BoundingBox = {
      x: round4(x1),
      y: round4(y1),
      width: round4(clamp01(c.x2 / width) - x1),
      height: round4(clamp01(c.y2 / height) - y1),
    };
    return {
      label: labels[c.classIndex] ?? `class ${c.classIndex}`,
      confidence: Math.round(clamp01(c.score) * 1000) / 1000,
      bbox,
    };
  });

/** How many detections there are of each label, most frequent first. */
export const countByLabel = (detections: readonly Detection[]): Record<string, number> => {
  const counts = new Map<string, number>();
  for (const { label } of detections) counts.set(label, (counts.get(label) ?? 0) + 1);
  return Object.fromEntries([...counts].sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0])));
};
