import type { Logger } from 'pino';
import { countByLabel, nonMaxSuppression, toDetections } from '../detection/nms.js';
import { answeredError, exchange, modelPath } from './inference-http.js';
import { CvModelError, effectiveParameters, type CvModel, type ModelReturns } from './port.js';
import type { TensorRemoteModelSetting } from './remote-settings.js';
import { inferBody, prepareInput } from './tensor-input.js';
import { metadataMismatch } from './tensor-metadata.js';
import { outputTensor, yoloCandidates } from './tensor-output.js';

/**
 * A stock detector on an Open Inference Protocol server (Triton, KServe v2) that takes an image tensor and
 * answers its raw output tensor: pre-processing (src/cv/models/tensor-input.ts), the infer call, decoding
 * (src/cv/models/tensor-output.ts), then per-class non-maximum suppression here. Before its first run the
 * model asks the server whether the model is ready and whether its inputs and outputs are the configured
 * ones, so a mismatch fails with a sentence rather than with a tensor of the wrong size.
 */

const returnsOf = (setting: TensorRemoteModelSetting): ModelReturns => ({
  detections:
    `objects of the classes under classes (${setting.labels.length}), as {label, confidence, bbox}, ` +
    `one per object: boxes of one class overlapping by more than ${setting.iouThreshold} (IoU) are merged`,
  summary: {
    counts: 'detections per label, most frequent first',
    image: 'the image as analysed, {width, height} in pixels (EXIF orientation applied)',
    model: "the server's name for the model and, when it says, its version",
    inferenceMs: 'milliseconds the inference server took to answer, transfer included',
    parameters: 'minConfidence, maxDetections and iouThreshold as applied',
  },
});

/** What a job that asks for nothing gets: as objects-coco's (src/cv/models/objects-coco.ts). */
const tensorDefaults = { minConfidence: 0.3, maxDetections: 100 };

export const tensorModel = (setting: TensorRemoteModelSetting, logger?: Logger): CvModel => {
  const remoteName = setting.remoteName ?? setting.name;
  const path = modelPath(setting.url, remoteName, setting.modelVersion);
  const get = (url: string, signal: AbortSignal) =>
    exchange({ model: setting.name, url, method: 'GET', timeoutMs: setting.timeoutMs, signal });

  const check = async () => {
    const signal = new AbortController().signal;
    const ready = await get(`${path}/ready`, signal);
    if (ready.status > 299)
      throw new CvModelError(
        'model_error',
        `The model ${setting.name} is not ready on its server (${remoteName}: HTTP ${ready.status}${ready.excerpt ? `: ${ready.excerpt}` : ''})`,
      );
    const metadata = await get(path, signal);
    if (metadata.status > 299) throw answeredError(setting.name, metadata.status, metadata.excerpt);
    const mismatch = metadataMismatch(metadata.json, setting);
    if (mismatch)
      throw new CvModelError(
        'model_error',
        `The model ${setting.name} does not match its configuration: ${mismatch}`,
      );
  };
  // One check at a time, shared by the jobs waiting on it; kept once passed, tried again after a failure.
  let checked: Promise<void> | undefined;
  let lastLogged: string | undefined;
  const ensureChecked = () => {
    checked ??= check().catch((error: unknown) => {
      checked = undefined;
      const message = (error as Error).message;
      if (message !== lastLogged)
        logger?.warn({ model: setting.name, err: error }, 'CV remote model check failed');
      lastLogged = message;
      throw error;
    });
    return checked;
  };

  return {
    name: setting.name,
    kind: 'remote',
    description:
      setting.description ??
      `A ${setting.output.format === 'yolov5' ? 'YOLOv5' : 'YOLOv8'} detector served by ${new URL(setting.url).host} over the Open Inference Protocol`,
    returns: returnsOf(setting),
    classes: setting.labels,
    run: async (image, { signal, parameters: given, decode }) => {
      const parameters = effectiveParameters(given, tensorDefaults);
      await ensureChecked();
      const prepared = await decode(() => prepareInput(image, setting.input, signal));
      const body = inferBody(setting.input, prepared.values);
      const started = performance.now();
      const reply = await exchange({
        model: setting.name,
        url: `${path}/infer`,
        method: 'POST',
        body,
        timeoutMs: setting.timeoutMs,
        signal,
      });
      const inferenceMs = Math.round(performance.now() - started);
      if (reply.status > 299) throw answeredError(setting.name, reply.status, reply.excerpt);
      const tensor = outputTensor(reply.json, setting.output.name);
      const candidates = yoloCandidates(tensor, {
        format: setting.output.format,
        classes: setting.labels.length,
        minConfidence: parameters.minConfidence,
        placement: prepared.placement,
        image: prepared.image,
      });
      const kept = nonMaxSuppression(candidates, { ...parameters, iouThreshold: setting.iouThreshold });
      const detections = toDetections(kept, { ...prepared.image, labels: setting.labels });
      const json = reply.json as { model_name?: unknown; model_version?: unknown };
      const version =
        typeof json.model_version === 'string' && json.model_version.length <= 64
          ? json.model_version
          : setting.modelVersion;
      return {
        detections,
        summary: {
          counts: countByLabel(detections),
          image: prepared.image,
          model: { name: remoteName, ...(version !== undefined ? { version } : {}) },
          inferenceMs,
          parameters: {
            minConfidence: parameters.minConfidence,
            maxDetections: parameters.maxDetections,
            iouThreshold: setting.iouThreshold,
          },
        },
      };
    },
  };
};
