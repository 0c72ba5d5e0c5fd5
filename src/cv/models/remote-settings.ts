import { parseDuration } from '../../core/durations.js';
import { isModelName, type ModelReturns } from './port.js';
import { parseTensorSetting, tensorFields, type TensorSetting } from './tensor-settings.js';

/**
 * The remote models' setting (CV_REMOTE_MODELS or CV_MODELS_FILE), parsed apart from the models that use
 * it (src/cv/models/remote.ts), so that reading the configuration loads no HTTP client.
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

export const isObject = (value: unknown): value is Record<string, unknown> =>
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
