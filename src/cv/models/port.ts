/**
 * The model port: everything a CV job can run. Built-in models analyse the image in this process with
 * sharp; remote models send it to an inference server (src/cv/models/remote.ts). The worker neither knows
 * nor cares which is which, beyond asking remote models' images to be decodable first.
 */

/** A box normalized to 0..1 of the image's width and height, from the top-left corner. */
export interface BoundingBox {
  x: number;
  y: number;
  width: number;
  height: number;
}

/** One thing a model found. Models may add fields of their own beside these. */
export interface Detection {
  label: string;
  /** 0..1 */
  confidence: number;
  bbox: BoundingBox;
  [extra: string]: unknown;
}

export interface ModelResult {
  detections: Detection[];
  /** Up to the model: what it measured about the image as a whole. */
  summary: Record<string, unknown>;
}

/** What a model returns, for `GET .../cv-models`: a sentence for the detections, one per summary field. */
export interface ModelReturns {
  detections: string;
  summary: Record<string, string>;
}

/**
 * What a job asks of a model that finds objects (POST .../cv-jobs, `parameters`): detections below
 * `minConfidence` are left out, and at most `maxDetections` are kept, the most confident first. Either may be
 * left out for the model's own default (`objects-coco`: 0.3 and 100); models that find no objects
 * (image-quality) ignore them.
 */
export interface DetectionParameters {
  /** 0..1 */
  minConfidence?: number;
  /** 1..1000 (resultLimits.maxDetections) */
  maxDetections?: number;
}

/** The parameters a run applies: the job's, or the model's defaults where the job left one out. */
export const effectiveParameters = (
  given: DetectionParameters,
  defaults: Required<DetectionParameters>,
): Required<DetectionParameters> => ({
  minConfidence: given.minConfidence ?? defaults.minConfidence,
  maxDetections: given.maxDetections ?? defaults.maxDetections,
});

/** What a run gets besides the image. */
export interface ModelRun {
  /** Aborts at the job's time-out, or when the worker stops. */
  signal: AbortSignal;
  parameters: DetectionParameters;
  /**
   * Runs a decode of the image in the process's decode queue (MEDIA_DECODE_CONCURRENCY), shared with
   * uploads: every decode of a full image goes through it, so that decodes at once stay within the memory
   * the operator planned for. The work after the decode (inference, a remote call) holds no slot.
   */
  decode: <T>(work: () => Promise<T>) => Promise<T>;
}

/** Whether a model can run here: a built-in model whose weights are missing or corrupt cannot. */
export type ModelStatus =
  | { available: true }
  /** `problem` is for anyone (the listing, a failed job); `detail` adds what only the operator should see. */
  | { available: false; problem: string; detail: string };

/** A model's status: available unless it says otherwise. */
export const statusOf = (model: Pick<CvModel, 'status'>): ModelStatus =>
  model.status?.() ?? { available: true };

export interface CvModel {
  /** Lower-case letters, digits, `.`, `_` and `-`: it is part of URLs, never a path. */
  name: string;
  kind: 'builtin' | 'remote';
  description: string;
  returns: ModelReturns;
  /** The labels its detections may carry, when it has a fixed list (a detector's classes). */
  classes?: readonly string[];
  /** What the model is and under which terms its weights are used, for `GET .../cv-models`. */
  about?: { version: string; licence: string; source: string };
  /** Still runs, but new work should use `replacement` (listed by `GET .../cv-models`). */
  deprecated?: { replacement: string };
  /** Available unless it says otherwise (checked at start; see src/cv/detection/weights.ts). */
  status?(): ModelStatus;
  /**
   * Analyses the image (the stored bytes: JPEG, PNG or WebP). Rejects with a CvModelError for a failure it
   * can name; anything else it throws is reported as `model_error`.
   */
  run(image: Buffer, job: ModelRun): Promise<ModelResult>;
  /** Releases what the model holds (worker threads); called when the service stops. */
  close?(): Promise<void>;
}

/** Why a job failed, as the job's `error.code` says it. */
export const failureCodes = [
  /** The model failed: a built-in model threw, or a remote one answered other than 2xx. */
  'model_error',
  /** A remote model could not be reached (connection refused, DNS). */
  'model_unreachable',
  /** A remote model answered 2xx with something that is not a valid inference reply. */
  'model_reply_invalid',
  /** The model is no longer configured (a remote model removed since the job was requested). */
  'model_unknown',
  /** The model is configured but cannot run here: a built-in model's weights are missing or corrupt. */
  'model_unavailable',
  /** The run took longer than CV_JOB_TIMEOUT or the remote model's own time-out. */
  'timeout',
  /** The observation's medium, or its bytes in the blob store, are gone. */
  'media_missing',
  /** The stored bytes are not an image sharp can decode (truncated, corrupt). */
  'media_unreadable',
  /** The job was started several times and no worker ever finished it (workers crashing on it). */
  'worker_lost',
] as const;

export type FailureCode = (typeof failureCodes)[number];

export class CvModelError extends Error {
  constructor(
    readonly code: FailureCode,
    message: string,
  ) {
    super(message);
  }
}

/** Model names: what `POST .../cv-jobs` accepts and what the models setting may name. */
export const modelNamePattern = /^[a-z0-9][a-z0-9._-]{0,63}$/;

export const isModelName = (name: string): boolean => modelNamePattern.test(name) && !name.includes('..');

/** The models built into the service (src/cv/models/registry.ts): a remote model may not take their names. */
export const builtinModelNames = ['image-quality', 'objects-coco', 'object-proposals'] as const;
