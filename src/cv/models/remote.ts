import { answeredError, exchange, invalidReply, modelPath } from './inference-http.js';
import { effectiveParameters, type CvModel, type ModelResult } from './port.js';
import { checkResult, resultLimits } from './result.js';
import { assertDecodable } from '../image.js';
import { isObject, type JsonRemoteModelSetting } from './remote-settings.js';

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
