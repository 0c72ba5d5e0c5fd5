import type { Candidate } from './nms.js';

/**
 * CenterNet's input and output, shared by its thread (centernet-thread.ts) and the model
 * (src/cv/models/objects-coco.ts). The model takes a 512 × 512 RGB image, stretched to the square (as the
 * model was converted and validated), values 0..255; it answers 100 rows of six numbers.
 */
export const centerNetInput = { side: 512 } as const;

/** One image for a thread: side × side × 3 bytes, row by row, RGB. */
export interface CenterNetTask {
  pixels: Uint8Array;
}

/** A thread's answer: the model's rows, and how long the model took (its loading left out). */
export interface CenterNetAnswer {
  rows: Float32Array;
  inferenceMs: number;
}

const rowLength = 6;

/**
 * The model's rows → candidates: x1, y1, x2, y2 in input pixels, a score 0..1, and a COCO class index.
 * Rows that are not numbers throughout (padding) are skipped.
 */
export const centerNetCandidates = (rows: Float32Array): Candidate[] => {
  const candidates: Candidate[] = [];
  for (let at = 0; at + rowLength <= rows.length; at += rowLength) {
    const [x1, y1, x2, y2, score, classIndex] = rows.subarray(at, at + rowLength) as unknown as number[];
    if (![x1, y1, x2, y2, score, classIndex].every(Number.isFinite)) continue;
    candidates.push({
      classIndex: Math.round(classIndex!),
      score: score!,
      x1: x1!,
      y1: y1!,
      x2: x2!,
      y2: y2!,
    });
  }
  return candidates;
};
