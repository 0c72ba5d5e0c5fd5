import { cocoLabels } from '../detection/coco-labels.js';
import { resultLimits } from './result.js';

/**
 * The part of a remote model's entry (CV_REMOTE_MODELS) that only `"protocol": "tensor"` models have: the
 * input tensor the server expects, the output tensor it answers and how to read it. See docs/api.md.
 */
export interface TensorInputSetting {
  /** The input tensor's name on the server (Ultralytics' ONNX export: `images`). */
  name: string;
  width: number;
  height: number;
  /** NCHW: [1, 3, H, W], planar; NHWC: [1, H, W, 3], interleaved. */
  layout: 'NCHW' | 'NHWC';
  /** FP32: each 0..255 channel value × `scale`; UINT8: the 0..255 values as they are. */
  datatype: 'FP32' | 'UINT8';
  scale: number;
  /** letterbox: keep the aspect ratio and pad with grey 114 (as Ultralytics does); stretch: fill. */
  resize: 'letterbox' | 'stretch';
}

export interface TensorOutputSetting {
  /** The output tensor's name on the server (Ultralytics' ONNX export: `output0`). */
  name: string;
  /** yolov8: [1, 4 + C, N] (or [1, N, 4 + C]), no objectness; yolov5: [1, N, 5 + C]. */
  format: 'yolov8' | 'yolov5';
}

export interface TensorSetting {
  input: TensorInputSetting;
  output: TensorOutputSetting;
  /** Class index → label. */
  labels: readonly string[];
  iouThreshold: number;
}

/** The fields of an entry this part reads, beside the common ones (remote.ts). */
export const tensorFields = ['input', 'output', 'labels', 'iouThreshold'] as const;

/** A side of the input at most this long: 2048 × 2048 × 3 numbers are already a 60 MB JSON request. */
export const maxInputSide = 2048;
const maxLabels = 1000;

const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

const tensorName = /^[A-Za-z0-9_][A-Za-z0-9_.:/-]{0,127}$/;

const oneOf = <T extends string>(value: unknown, allowed: readonly T[], fallback: T, field: string): T => {
  if (value === undefined) return fallback;
  if (typeof value === 'string' && (allowed as readonly string[]).includes(value)) return value as T;
  throw new Error(`${field} must be ${allowed.map((a) => `"${a}"`).join(' or ')}`);
};

const onlyKnown = (object: Record<string, unknown>, known: readonly string[], field: string) => {
  const unknown = Object.keys(object).filter((key) => !known.includes(key));
  if (unknown.length > 0) throw new Error(`${field}: unknown field ${unknown.join(', ')}`);
};

const side = (value: unknown, field: string): number => {
  if (typeof value === 'number' && Number.isInteger(value) && value >= 1 && value <= maxInputSide)
    return value;
  throw new Error(`${field} must be a whole number of pixels from 1 to ${maxInputSide}`);
};

const parseInput = (input: unknown): TensorInputSetting => {
  if (!isObject(input))
    throw new Error('input must be an object {name, width, height, layout?, datatype?, scale?, resize?}');
  onlyKnown(input, ['name', 'width', 'height', 'layout', 'datatype', 'scale', 'resize'], 'input');
  if (typeof input.name !== 'string' || !tensorName.test(input.name))
    throw new Error('input.name must be the input tensor\'s name, such as "images"');
  const datatype = oneOf(input.datatype, ['FP32', 'UINT8'], 'FP32', 'input.datatype');
  if (datatype === 'UINT8' && input.scale !== undefined)
    throw new Error('input.scale applies to FP32 only: a UINT8 input is sent as 0..255');
  const scale = input.scale ?? 1 / 255;
  if (typeof scale !== 'number' || !Number.isFinite(scale) || scale <= 0 || scale > 1)
    throw new Error(
      'input.scale must be a number above 0 and at most 1, such as 0.00392156862745098 (1/255)',
    );
  return {
    name: input.name,
    width: side(input.width, 'input.width'),
    height: side(input.height, 'input.height'),
    layout: oneOf(input.layout, ['NCHW', 'NHWC'], 'NCHW', 'input.layout'),
    datatype,
    scale: datatype === 'UINT8' ? 1 : scale,
    resize: oneOf(input.resize, ['letterbox', 'stretch'], 'letterbox', 'input.resize'),
  };
};

const parseOutput = (output: unknown): TensorOutputSetting => {
  if (!isObject(output)) throw new Error('output must be an object {name, format}');
  onlyKnown(output, ['name', 'format'], 'output');
  if (typeof output.name !== 'string' || !tensorName.test(output.name))
    throw new Error('output.name must be the output tensor\'s name, such as "output0"');
  if (output.format === undefined) throw new Error('output.format must be "yolov8" or "yolov5"');
  return { name: output.name, format: oneOf(output.format, ['yolov8', 'yolov5'], 'yolov8', 'output.format') };
};

const parseLabels = (labels: unknown): readonly string[] => {
  if (labels === undefined || labels === 'coco') return cocoLabels;
  const fine =
    Array.isArray(labels) &&
    labels.length >= 1 &&
    labels.length <= maxLabels &&
    labels.every(
      (label) =>
        typeof label === 'string' && label.length >= 1 && label.length <= resultLimits.maxLabelLength,
    );
  if (!fine)
    throw new Error(
      `labels must be "coco" or a list of 1 to ${maxLabels} class names (1 to ${resultLimits.maxLabelLength} characters each), in the model's class order`,
    );
  return labels as string[];
};

/** The tensor part of one entry; throws an Error naming the field (the caller adds the entry). */
export const parseTensorSetting = (entry: Record<string, unknown>): TensorSetting => {
  const iouThreshold = entry.iouThreshold ?? 0.45;
  if (typeof iouThreshold !== 'number' || !(iouThreshold > 0 && iouThreshold <= 1))
    throw new Error('iouThreshold must be a number above 0 and at most 1, such as 0.45');
  return {
    input: parseInput(entry.input),
    output: parseOutput(entry.output),
    labels: parseLabels(entry.labels),
    iouThreshold,
  };
};
