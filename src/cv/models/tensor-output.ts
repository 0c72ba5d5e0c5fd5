import type { Candidate } from '../detection/nms.js';
import { invalidReply as invalid } from './inference-http.js';
import { imageCoordinates, type Placement } from './tensor-input.js';
import type { TensorOutputSetting } from './tensor-settings.js';

/**
 * Post-processing for a tensor model (src/cv/models/tensor.ts): the server's reply → one output tensor,
 * checked → candidate boxes in the image's pixels, ready for non-maximum suppression. Everything in the
 * reply is distrusted: each way it can be wrong fails with `model_reply_invalid` saying which.
 */

export interface OutputTensor {
  shape: number[];
  data: number[];
}

/** Scores a hair outside 0..1 are rounding; further out they are logits or garbage. */
const slack = 1e-3;
const floatTypes = ['FP32', 'FP16', 'FP64'];

const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

const shown = (value: unknown): string =>
  typeof value === 'number' ? String(value) : (JSON.stringify(value)?.slice(0, 60) ?? String(value));

/** The named output of an infer reply, with a shape that matches its data and data that are finite numbers. */
export const outputTensor = (body: unknown, name: string): OutputTensor => {
  if (!isObject(body) || !Array.isArray(body.outputs))
    throw invalid('the reply must be an object with outputs');
  const output: unknown = (body.outputs as unknown[]).find(
    (candidate) => isObject(candidate) && candidate.name === name,
  );
  if (!isObject(output)) {
    const names = (body.outputs as unknown[])
      .slice(0, 10)
      .map((candidate) => (isObject(candidate) ? shown(candidate.name) : '?'))
      .join(', ');
    throw invalid(`the reply has no output named ${name} (it has ${names || 'none'})`);
  }
  if (typeof output.datatype !== 'string' || !floatTypes.includes(output.datatype))
    throw invalid(`output ${name} has datatype ${shown(output.datatype)}; it must be FP32, FP16 or FP64`);
  const { shape } = output;
  if (
    !Array.isArray(shape) ||
    shape.length < 1 ||
    shape.length > 8 ||
    !shape.every((d) => typeof d === 'number' && Number.isSafeInteger(d) && d >= 0)
  )
    throw invalid(`output ${name} has shape ${shown(shape)}; it must be a list of whole numbers`);
  let data = output.data;
  if (!Array.isArray(data)) throw invalid(`output ${name} has no data list`);
  // The protocol allows the data nested as the shape says; flattening is bounded by what the reply holds.
  if (Array.isArray(data[0])) data = (data as unknown[]).flat(shape.length - 1);
  const list = data as unknown[];
  // The product is compared as it grows, so a shape of [1e15, 1e15] cannot overflow into a match.
  let elements = 1;
  for (const dimension of shape as number[]) {
    elements *= dimension;
    if (elements > list.length) break;
  }
  if (elements !== list.length)
    throw invalid(
      `output ${name} has shape [${(shape as number[]).join(', ')}] but ${list.length} data elements`,
    );
  for (let i = 0; i < list.length; i += 1) {
    const value = list[i];
    if (typeof value !== 'number' || !Number.isFinite(value))
      throw invalid(`output ${name} data element ${i} is ${shown(value)}, not a finite number`);
  }
  return { shape: shape as number[], data: list as number[] };
};

/** How a YOLO output is laid out: where box `i`'s attribute `a` is, and how many boxes and classes. */
interface Layout {
  boxes: number;
  classes: number;
  boxStride: number;
  attributeStride: number;
  objectness: boolean;
}

/**
 * yolov8: [1, 4 + C, N] as Ultralytics exports it, or [1, N, 4 + C] transposed when only that reading fits
 * the labels; yolov5: [1, N, 5 + C].
 */
export const yoloLayout = (
  shape: readonly number[],
  format: TensorOutputSetting['format'],
  classes: number,
): Layout => {
  const said = `[${shape.join(', ')}]`;
  if (shape.length !== 3 || shape[0] !== 1)
    throw invalid(`the output's shape ${said} is not [1, rows, columns] as a ${format} detector's is`);
  const [, rows, columns] = shape as [number, number, number];
  if (format === 'yolov5') {
    if (columns !== 5 + classes)
      throw invalid(
        `the output's shape ${said} has ${columns - 5} classes per box (yolov5: [1, N, 5 + classes]) but labels names ${classes}`,
      );
    return { boxes: rows, classes, boxStride: columns, attributeStride: 1, objectness: true };
  }
  const attributes = 4 + classes;
  if (rows === attributes)
    return { boxes: columns, classes, boxStride: 1, attributeStride: columns, objectness: false };
  if (columns === attributes)
    return { boxes: rows, classes, boxStride: columns, attributeStride: 1, objectness: false };
  throw invalid(
    `the output's shape ${said} has ${rows - 4} classes per box (yolov8: [1, 4 + classes, N]) but labels names ${classes}`,
  );
};

const checkScore = (value: number, box: number, what: string) => {
  if (value < -slack || value > 1 + slack)
    throw invalid(`box ${box} has ${what} ${value}, outside 0..1 (are these logits, not probabilities?)`);
};

/**
 * The boxes scoring at least `minConfidence` (the best class's score, × objectness for yolov5), moved from
 * the input tensor's pixels to the image's (undoing the letterbox) and clipped to the image.
 */
export const yoloCandidates = (
  tensor: OutputTensor,
  {
    format,
    classes,
    minConfidence,
    placement,
    image,
  }: {
    format: TensorOutputSetting['format'];
    classes: number;
    minConfidence: number;
    placement: Placement;
    image: { width: number; height: number };
  },
): Candidate[] => {
  const layout = yoloLayout(tensor.shape, format, classes);
  const { data } = tensor;
  const { boxStride, attributeStride } = layout;
  const firstClass = layout.objectness ? 5 : 4;
  const candidates: Candidate[] = [];
  const { x: toX, y: toY } = imageCoordinates(placement, image);
  for (let box = 0; box < layout.boxes; box += 1) {
    const at = (attribute: number) => data[box * boxStride + attribute * attributeStride]!;
    const width = at(2);
    const height = at(3);
    if (width < 0 || height < 0)
      throw invalid(
        `box ${box} has a negative ${width < 0 ? 'width' : 'height'} (${width < 0 ? width : height})`,
      );
    let best = 0;
    let classIndex = 0;
    for (let c = 0; c < classes; c += 1) {
      const score = at(firstClass + c);
      checkScore(score, box, `a class ${c} score of`);
      if (score > best) {
        best = score;
        classIndex = c;
      }
    }
    let score = best;
    if (layout.objectness) {
      const objectness = at(4);
      checkScore(objectness, box, 'an objectness of');
      score *= objectness;
    }
    score = Math.min(1, Math.max(0, score));
    if (score < minConfidence || score === 0) continue;
    const cx = at(0);
    const cy = at(1);
    candidates.push({
      classIndex,
      score,
      x1: toX(cx - width / 2),
      y1: toY(cy - height / 2),
      x2: toX(cx + width / 2),
      y2: toY(cy + height / 2),
    });
  }
  return candidates;
};
