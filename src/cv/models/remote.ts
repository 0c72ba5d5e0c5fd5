import { request } from 'undici';
import { parseDuration } from '../../core/durations.js';
import { CvModelError, isModelName, type CvModel, type ModelResult, type ModelReturns } from './port.js';
import { checkResult } from './result.js';
import { assertDecodable } from '../image.js';

/**
 * Models served elsewhere, over the Open Inference Protocol (KServe v2 REST):
 *
 *   POST {url}/v2/models/{name}/infer
 *   {"inputs": [{"name": "image", "shape": [1], "datatype": "BYTES", "data": ["<base64 of the image file>"]}]}
 *
 * and a 2xx answer
 *
 *   {"outputs": [{"name": "detections", "datatype": "BYTES", "shape": [1], "data": ["<JSON list of detections>"]},
 *                {"name": "summary",    "datatype": "BYTES", "shape": [1], "data": ["<JSON object>"]}]}
 *
 * `summary` may be left out (it is then `{}`); other outputs are ignored. See docs/api.md.
 */
export interface RemoteModelSetting {
  name: string;
  /** Base URL of the inference server, without a trailing slash. */
  url: string;
  timeoutMs: number;
  description?: string;
  returns?: ModelReturns;
}

/** Replies larger than this are refused unread: an image's detections fit in far less. */
const maxReplyBytes = 16 * 1024 * 1024;
const defaultTimeout = '30s';

const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/**
 * Parses the models setting (the JSON of CV_REMOTE_MODELS or of the CV_MODELS_FILE file): a list of
 * `{name, url, timeout?, description?, returns?}`. Throws an Error naming the offending entry and field.
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
    const unknown = Object.keys(entry).filter(
      (key) => !['name', 'url', 'timeout', 'description', 'returns'].includes(key),
    );
    if (unknown.length > 0) throw new Error(`${at}: unknown field ${unknown.join(', ')}`);
    const { name, url, timeout = defaultTimeout, description, returns } = entry;
    if (typeof name !== 'string' || !isModelName(name))
      throw new Error(`${at}: name must be 1 to 64 lower-case letters, digits, ".", "_" or "-"`);
    if (seen.has(name)) throw new Error(`${at}: the model name ${name} is taken`);
    seen.add(name);
    let parsed: URL;
    try {
      parsed = new URL(String(url));
    } catch {
      throw new Error(`${at} (${name}): url must be an absolute http or https URL`);
    }
    if (!['http:', 'https:'].includes(parsed.protocol) || parsed.search || parsed.hash)
      throw new Error(`${at} (${name}): url must be an http or https URL without query or fragment`);
    const timeoutMs = typeof timeout === 'string' ? parseDuration(timeout) : undefined;
    if (!timeoutMs) throw new Error(`${at} (${name}): timeout must be a duration such as 10s`);
    if (description !== undefined && typeof description !== 'string')
      throw new Error(`${at} (${name}): description must be a string`);
    if (
      returns !== undefined &&
      !(
        isObject(returns) &&
        typeof returns.detections === 'string' &&
        isObject(returns.summary) &&
        Object.values(returns.summary).every((value) => typeof value === 'string')
      )
    ) {
      throw new Error(`${at} (${name}): returns must be {detections: string, summary: {field: string}}`);
    }
    return {
      name,
      url: parsed.href.replace(/\/+$/, ''),
      timeoutMs,
      ...(description !== undefined ? { description } : {}),
      ...(returns !== undefined ? { returns: returns as unknown as ModelReturns } : {}),
    };
  });
};

const invalid = (message: string) => new CvModelError('model_reply_invalid', message);

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

const readCapped = async (body: AsyncIterable<Buffer>, limit: number): Promise<Buffer | null> => {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of body) {
    size += chunk.length;
    if (size > limit) return null;
    chunks.push(chunk);
  }
  return Buffer.concat(chunks);
};

export const remoteModel = (setting: RemoteModelSetting): CvModel => ({
  name: setting.name,
  kind: 'remote',
  description:
    setting.description ?? `Served by ${new URL(setting.url).host} over the Open Inference Protocol`,
  returns: setting.returns ?? {
    detections: 'as the inference server reports them: {label, confidence, bbox} and any fields of its own',
    summary: {},
  },
  run: async (image, { signal, decode }) => {
    await decode(() => assertDecodable(image, signal));
    const timeout = AbortSignal.timeout(setting.timeoutMs);
    const both = AbortSignal.any([signal, timeout]);
    const timedOut = () =>
      new CvModelError('timeout', `The model ${setting.name} did not answer within ${setting.timeoutMs} ms`);
    const url = `${setting.url}/v2/models/${encodeURIComponent(setting.name)}/infer`;
    let response;
    try {
      response = await request(url, {
        method: 'POST',
        headers: { 'content-type': 'application/json', accept: 'application/json' },
        body: JSON.stringify(inferRequest(image)),
        signal: both,
      });
    } catch (error) {
      if (signal.aborted) throw error;
      if (timeout.aborted) throw timedOut();
      throw new CvModelError(
        'model_unreachable',
        `The model ${setting.name} cannot be reached: ${(error as Error).message}`,
      );
    }
    let raw: Buffer | null;
    try {
      raw = await readCapped(response.body, maxReplyBytes);
    } catch (error) {
      if (signal.aborted) throw error;
      if (timeout.aborted) throw timedOut();
      throw new CvModelError(
        'model_error',
        `The model ${setting.name} broke off its reply: ${(error as Error).message}`,
      );
    } finally {
      // An early return leaves the rest unread; let the connection go.
      response.body.destroy();
    }
    if (response.statusCode < 200 || response.statusCode > 299) {
      const excerpt = (raw ?? Buffer.alloc(0)).toString('utf8', 0, 200).replace(/\s+/g, ' ').trim();
      throw new CvModelError(
        'model_error',
        `The model ${setting.name} answered HTTP ${response.statusCode}${excerpt ? `: ${excerpt}` : ''}`,
      );
    }
    if (raw === null) throw invalid(`the reply is larger than ${maxReplyBytes} bytes`);
    let body: unknown;
    try {
      body = JSON.parse(raw.toString('utf8'));
    } catch {
      throw invalid('the reply is not JSON');
    }
    return parseInferReply(body);
  },
});
