import { boundsProblem } from '../../core/json-bounds.js';
import { CvModelError, type Detection, type ModelResult } from './port.js';

/** What a job may store as its result: bounded, so one model cannot bloat the event store. */
export const resultLimits = { maxDetections: 1000, maxLabelLength: 256, maxBytes: 256 * 1024 } as const;

/** Rounding in a model's arithmetic may push a box a hair past the edge. */
const slack = 1e-3;

const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

const fraction = (value: unknown): value is number =>
  typeof value === 'number' && Number.isFinite(value) && value >= 0 && value <= 1;

const invalid = (message: string) => new CvModelError('model_reply_invalid', message);

const checkDetection = (item: unknown, index: number): Detection => {
  const at = `detections.${index}`;
  if (!isObject(item)) throw invalid(`${at} must be an object`);
  const { label, confidence, bbox } = item;
  if (typeof label !== 'string' || label.length === 0 || label.length > resultLimits.maxLabelLength)
    throw invalid(`${at}.label must be a string of 1 to ${resultLimits.maxLabelLength} characters`);
  if (!fraction(confidence)) throw invalid(`${at}.confidence must be a number from 0 to 1`);
  if (!isObject(bbox)) throw invalid(`${at}.bbox must be an object {x, y, width, height}`);
  for (const key of ['x', 'y', 'width', 'height'] as const) {
    if (!fraction(bbox[key])) throw invalid(`${at}.bbox.${key} must be a number from 0 to 1`);
  }
  // Extra fields are kept, so they get the bounds of any free-form JSON the read side must hold.
  const problem = boundsProblem(item);
  if (problem !== undefined) throw invalid(`${at} ${problem}`);
  const box = bbox as { x: number; y: number; width: number; height: number };
  if (box.x + box.width > 1 + slack || box.y + box.height > 1 + slack)
    throw invalid(`${at}.bbox must lie inside the image (x + width and y + height at most 1)`);
  return item as Detection;
};

/**
 * Checks what a model returned against the result contract: `detections` a list of
 * `{label, confidence (0..1), bbox {x, y, width, height} (0..1, inside the image)}` (extra fields kept),
 * `summary` an object; at most 1000 detections and 256 KiB of JSON. Fails with `model_reply_invalid`,
 * naming the first offending path.
 */
export const checkResult = (value: unknown): ModelResult => {
  if (!isObject(value)) throw invalid('the result must be an object {detections, summary}');
  const { detections, summary } = value;
  if (!Array.isArray(detections)) throw invalid('detections must be a list');
  if (detections.length > resultLimits.maxDetections)
    throw invalid(
      `detections has ${detections.length} items; at most ${resultLimits.maxDetections} are kept`,
    );
  if (!isObject(summary)) throw invalid('summary must be an object');
  const problem = boundsProblem(summary);
  if (problem !== undefined) throw invalid(`summary ${problem}`);
  const result: ModelResult = { detections: detections.map(checkDetection), summary };
  const size = Buffer.byteLength(JSON.stringify(result));
  if (size > resultLimits.maxBytes)
    throw invalid(`the result is ${size} bytes of JSON; at most ${resultLimits.maxBytes} are kept`);
  return result;
};
