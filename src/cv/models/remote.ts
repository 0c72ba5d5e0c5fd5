import { parseDuration } from '../../core/durations.js';
import { answeredError, exchange, invalidReply, modelPath } from './inference-http.js';
import {
  effectiveParameters,
  isModelName,
  type CvModel,
  type ModelResult,
  type ModelReturns,
} from './port.js';
import { checkResult, resultLimits } from './result.js';
import { assertDecodable } from '../image.js';
import { parseTensorSetting, tensorFields, type TensorSetting } from './tensor-settings.js';

/**
 * Models served elsewhere, over the Open Inference Protocol (KServe v2 REST), in one of two modes.
 *
 * `"protocol": "json"` (the default), a contract of this service's own:
 *
 *   POST {url}/v2/models/{name}/infer
 *   {"inputs": [{"name": "image", "shape": [1], "datatype": "BYTES", "data": ["<base64 of the image file>"]}]}
 *
 * and a 2xx answer
 *
 *   {"outputs": [{"name": "detections", "datatype": "BYTES", "shape": [1], "data": ["<JSON list of detections>"]},
 *                {"name": "summary",    "datatype": "BYTES", "shape": [1], "data": ["<JSON object>"]}]}
 *
 * `summary` may be left out (it is then `{}`); other outputs are ignored. `"protocol": "tensor"`: a stock
 * detector that takes an image tensor and answers raw output tensors (src/cv/models/tensor.ts). See
 * docs/api.md.
 */
interface RemoteModelCommon {
  name: string;
  /** Base URL of the inference server, without a trailing slash. */
  url: string;
  timeoutMs: number;
  description?: string;
  /** The model's name on the server, when it differs from `name`. */
  remoteName?: string;
  /** A version of the model on the server (`/v2/models/{name}/versions/{version}`); the server's choice if unset. */
  modelVersion?: string;
}

export type JsonRemoteModelSetting = RemoteModelCommon & { protocol?: 'json'; returns?: ModelReturns };
export type TensorRemoteModelSetting = RemoteModelCommon & { protocol: 'tensor' } & TensorSetting;
export type RemoteModelSetting = JsonRemoteModelSetting | TensorRemoteModelSetting;

const defaultTimeout = '30s';
const commonFields = ['name', 'url', 'timeout', 'description', 'protocol', 'remoteName', 'modelVersion'];
/** Triton's and KServe's model names and versions: no slash, no `..`. */
const serverName = /^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$/;

const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/** The optional name or version of the model on the server. */
const serverPart = (value: unknown, field: string): string | undefined => {
  if (value === undefined) return undefined;
  if (typeof value === 'string' && serverName.test(value) && !value.includes('..')) return value;
  throw new Error(`${field} must be 1 to 128 letters, digits, "_", "." or "-"`);
};

/**
 * Parses the models setting (the JSON of CV_REMOTE_MODELS or of the CV_MODELS_FILE file): a list of
 * `{name, url, timeout?, description?, protocol?, remoteName?, modelVersion?}` plus `returns?` for the json
 * protocol or `input, output, labels?, iouThreshold?` for the tensor protocol. Throws an Error naming the
 * offending entry and field.
 */
export const parseRemoteModelSettings = (
  json: unknown,
  reserved: readonly string[] = [],
): RemoteModelSetting[] => {
  const list = isObject(json) && Array.isArray(json.models) ? json.models : json;
  if (!Array.isArray(list)) throw new Error('must be a JSON list of {name, url, timeout}');
  const seen = new Set<string>(reserved);
  return list.map((entry: unknown, index): RemoteModelSetting => {
    const at = `entry ${index}`;
    if (!isObject(entry)) throw new Error(`${at} must be an object {name, url, timeout}`);
    const { name, url, timeout = defaultTimeout, description, returns, protocol = 'json' } = entry;
    if (protocol !== 'json' && protocol !== 'tensor')
      throw new Error(`${at}: protocol must be "json" or "tensor"`);
    const known = [...commonFields, ...(protocol === 'json' ? ['returns'] : tensorFields)];
    const unknown = Object.keys(entry).filter((key) => !known.includes(key));
    if (unknown.length > 0)
      throw new Error(
        `${at}: unknown field ${unknown.join(', ')}${protocol === 'json' && unknown.some((key) => (tensorFields as readonly string[]).includes(key)) ? ' (input, output, labels and iouThreshold need "protocol": "tensor")' : ''}`,
      );
    if (typeof name !== 'string' || !isModelName(name))
      throw new Error(`${at}: name must be 1 to 64 lower-case letters, digits, ".", "_" or "-"`);
    if (seen.has(name)) throw new Error(`${at}: the model name ${name} is taken`);
    seen.add(name);
    const named = `${at} (${name})`;
    let parsed: URL;
    try {
      parsed = new URL(String(url));
    } catch {
      throw new Error(`${named}: url must be an absolute http or https URL`);
    }
    if (!['http:', 'https:'].includes(parsed.protocol) || parsed.search || parsed.hash)
      throw new Error(`${named}: url must be an http or https URL without query or fragment`);
    const timeoutMs = typeof timeout === 'string' ? parseDuration(timeout) : undefined;
    if (!timeoutMs) throw new Error(`${named}: timeout must be a duration such as 10s`);
    if (description !== undefined && typeof description !== 'string')
      throw new Error(`${named}: description must be a string`);
    let remoteName: string | undefined;
    let modelVersion: string | undefined;
    try {
      remoteName = serverPart(entry.remoteName, 'remoteName');
      modelVersion = serverPart(entry.modelVersion, 'modelVersion');
    } catch (error) {
      throw new Error(`${named}: ${(error as Error).message}`, { cause: error });
    }
    const common: RemoteModelCommon = {
      name,
      url: parsed.href.replace(/\/+$/, ''),
      timeoutMs,
      ...(description !== undefined ? { description } : {}),
      ...(remoteName !== undefined ? { remoteName } : {}),
      ...(modelVersion !== undefined ? { modelVersion } : {}),
    };
    if (protocol === 'tensor') {
      try {
        return { ...common, protocol, ...parseTensorSetting(entry) };
      } catch (error) {
        throw new Error(`${named}: ${(error as Error).message}`, { cause: error });
      }
    }
    if (
      returns !== undefined &&
      !(
        isObject(returns) &&
        typeof returns.detections === 'string' &&
        isObject(returns.summary) &&
        Object.values(returns.summary).every((value) => typeof value === 'string')
      )
    ) {
      throw new Error(`${named}: returns must be {detections: string, summary: {field: string}}`);
    }
    return { ...common, ...(returns !== undefined ? { returns: returns as unknown as ModelReturns } : {}) };
  });
};

const invalid = invalidReply;

/** One BYTES output of shape [1] holding a JSON text, parsed; undefined when the reply has no such output. */
const jsonOutput = (outputs: unknown[], name: string): unknown => {
  const output = outputs.find((candidate) => isObject(candidate) && candidate.name === name);
  if (output === undefined) return undefined;
  if (!isObject(output)) throw invalid(`output ${name} must be an object`);
  if (output.datatype !== 'BYTES') throw invalid(`output ${name} must have datatype BYTES`);
  if (!Array.isArray(output.shape) || output.shape.length !== 1 || output.shape[0] !== 1)
    throw invalid(`output ${name} must have shape [1]`);
  if (!Array.isArray(output.data) || output.data.length !== 1 || typeof output.data[0] !== 'string')
    throw invalid(`output ${name} must have data [<one JSON string>]`);
  try {
    return JSON.parse(output.data[0]) as unknown;
  } catch {
    throw invalid(`output ${name} does not hold valid JSON`);
  }
};

/** An inference reply's body → the job's result; fails with `model_reply_invalid` saying what is wrong. */
export const parseInferReply = (body: unknown): ModelResult => {
  if (!isObject(body) || !Array.isArray(body.outputs))
    throw invalid('the reply must be an object with outputs');
  const detections = jsonOutput(body.outputs, 'detections');
  if (detections === undefined) throw invalid('the reply has no output named detections');
  const summary = jsonOutput(body.outputs, 'summary') ?? {};
  return checkResult({ detections, summary });
};

/** The infer request for one image. */
export const inferRequest = (image: Buffer) => ({
  inputs: [{ name: 'image', shape: [1], datatype: 'BYTES', data: [image.toString('base64')] }],
});

/** The json protocol's model: the server's detections, checked, then the job's parameters applied. */
export const jsonRemoteModel = (setting: JsonRemoteModelSetting): CvModel => ({
  name: setting.name,
  kind: 'remote',
  description:
    setting.description ?? `Served by ${new URL(setting.url).host} over the Open Inference Protocol`,
  returns: setting.returns ?? {
    detections: 'as the inference server reports them: {label, confidence, bbox} and any fields of its own',
    summary: {},
  },
  run: async (image, { signal, parameters, decode }) => {
    await decode(() => assertDecodable(image, signal));
    const path = modelPath(setting.url, setting.remoteName ?? setting.name, setting.modelVersion);
    const reply = await exchange({
      model: setting.name,
      url: `${path}/infer`,
      method: 'POST',
      body: JSON.stringify(inferRequest(image)),
      timeoutMs: setting.timeoutMs,
      signal,
    });
    if (reply.status > 299) throw answeredError(setting.name, reply.status, reply.excerpt);
    // Unless the job asks, the server's detections are kept as it sent them.
    const applied = effectiveParameters(parameters, {
      minConfidence: 0,
      maxDetections: resultLimits.maxDetections,
    });
    return applyParameters(parseInferReply(reply.json), applied);
  },
});

/** Leaves out detections below `minConfidence` and keeps the `maxDetections` most confident, in the server's order. */
export const applyParameters = (
  result: ModelResult,
  { minConfidence, maxDetections }: { minConfidence: number; maxDetections: number },
): ModelResult => {
  const confident = result.detections.filter((d) => d.confidence >= minConfidence);
  if (confident.length <= maxDetections) return { ...result, detections: confident };
  const kept = new Set(
    confident
      .map((d, index) => ({ confidence: d.confidence, index }))
      .sort((a, b) => b.confidence - a.confidence || a.index - b.index)
      .slice(0, maxDetections)
      .map(({ index }) => index),
  );
  return { ...result, detections: confident.filter((_, index) => kept.has(index)) };
};
