import type { Candidate } from './nms.js';

/**
 * CenterNet's input and output, shared by its thread (centernet-thread.ts) and the model
 * (src/cv/models/objects-coco.ts). The model takes a 512 × 512 RGB image, values 0..255, row by row; it
 * answers 100 rows of six numbers. The photograph is letterboxed into it (its aspect ratio kept, padded
 * with grey): on the test photographs that scored the right class higher than stretching it to the square
 * did (Chelsea the cat a `cat` at 0.50 rather than a `dog` at 0.50, darknet's eagle a `bird` at 0.71
 * rather than 0.56, the dog beside the person at 0.54 rather than 0.36).
 */
export const centerNetInput = { width: 512, height: 512, layout: 'NHWC', resize: 'letterbox' } as const;

/** One image for a thread: width × height × 3 bytes, row by row, RGB. */
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
 * Rows that are not numbers throughout (padding) are skipped. CenterNet finds an object as a peak at its
 * centre in each class's heat map, and its box size is shared by the classes, so the rows of one object
 * under several classes have the very same box (a white horse as `cow` 0.36 and `sheep` 0.34): only the
 * best class of each box is kept, as a YOLO model gives one class a box.
 */
export const centerNetCandidates = (rows: Float32Array): Candidate[] => {
  const best = new Map<string, Candidate>();
  for (let at = 0; at + rowLength <= rows.length; at += rowLength) {
    const [x1, y1, x2, y2, score, classIndex] = rows.subarray(at, at + rowLength) as unknown as number[];
    if (![x1, y1, x2, y2, score, classIndex].every(Number.isFinite)) continue;
    const box = `${x1} ${y1} ${x2} ${y2}`;
    if ((best.get(box)?.score ?? -Infinity) >= score!) continue;
    best.set(box, { classIndex: Math.round(classIndex!), score: score!, x1: x1!, y1: y1!, x2: x2!, y2: y2! });
  }
  return [...best.values()];
};
