import { ThreadFailedError, threadPool, type ThreadPool } from '../../core/thread-pool.js';
import {
  centerNetCandidates,
  centerNetInput,
  type CenterNetAnswer,
  type CenterNetTask,
} from '../detection/centernet.js';
import { cocoLabels } from '../detection/coco-labels.js';
import { countByLabel, nonMaxSuppression, toDetections } from '../detection/nms.js';
import { centerNetFiles, loadCenterNetWeights } from '../detection/weights.js';
import {
  CvModelError,
  effectiveParameters,
  type CvModel,
  type ModelResult,
  type ModelStatus,
} from './port.js';
import { imageCoordinates, prepareInput } from './tensor-input.js';

export interface ObjectsCocoSettings {
  /** Inference threads (CV_WORKERS), each with the model loaded once. */
  threads: number;
  /** Where centernet.json and centernet.bin are: the installed package's folder unless given (tests). */
  modelsDir?: string | null;
  /** The thread's script: the CenterNet thread unless given (tests give one that crashes). */
  script?: URL;
}

export const objectsCocoDefaults = { minConfidence: 0.3, maxDetections: 100 } as const;

/** Boxes of one class overlapping more than this are one object: the weaker box is dropped. */
const iouThreshold = 0.45;

/**
 * Each thread's V8 heap; the model's tensors live in WebAssembly memory, outside it (about 100 MB a thread
 * at its peak: docs/operations.md).
 */
const threadHeapMb = 128;

/** `.ts` when run from source (tsx), `.js` when built: the thread's script is a sibling of this file. */
const sourceExtension = import.meta.url.slice(import.meta.url.lastIndexOf('.'));

const modelVersion = `${centerNetFiles.package} ${centerNetFiles.version} (weights sha256 ${centerNetFiles.weights.sha256.slice(0, 12)})`;

/**
 * `objects-coco`: what is in the photograph, among the 80 COCO classes (person, dog, horse, bird, car…),
 * with a box for each. CenterNet (MobileNetV3) runs in worker threads (src/cv/detection/centernet-thread.ts),
 * so a run holds the event loop only for the decode's hand-off and the suppression of at most 100 boxes.
 */
export const objectsCoco = (settings: ObjectsCocoSettings): CvModel & { threads: () => number } => {
  const weights = loadCenterNetWeights(settings.modelsDir ?? undefined);
  const status: ModelStatus = weights.ok
    ? { available: true }
    : { available: false, problem: weights.problem, detail: weights.detail };
  let pool: ThreadPool<CenterNetTask, CenterNetAnswer> | null = null;
  const threads = () => {
    if (!weights.ok) throw new CvModelError('model_unavailable', weights.problem);
    return (pool ??= threadPool<CenterNetTask, CenterNetAnswer>({
      script: settings.script ?? new URL(`../detection/centernet-thread${sourceExtension}`, import.meta.url),
      size: settings.threads,
      workerData: weights.artifacts,
      resourceLimits: { maxOldGenerationSizeMb: threadHeapMb },
    }));
  };

  const infer = async (pixels: Uint8Array, signal: AbortSignal): Promise<CenterNetAnswer> => {
    try {
      return await threads().run({ pixels }, { signal, transfer: [pixels.buffer as ArrayBuffer] });
    } catch (error) {
      if (error instanceof ThreadFailedError)
        throw new CvModelError('model_error', `The detector's thread failed: ${error.message}`);
      throw error;
    }
  };

  return {
    name: 'objects-coco',
    kind: 'builtin',
    description:
      'What is in the photograph: people, animals (bird, cat, dog, horse, sheep, cow, elephant, bear, zebra, giraffe), vehicles and everyday objects, the 80 classes of COCO, each with a box. CenterNet with a MobileNetV3 backbone, run in this service on the CPU.',
    returns: {
      detections:
        'one per object found, the most confident first: label (a COCO class), confidence 0..1, bbox normalized from the top-left corner',
      summary: {
        counts: 'how many of each label, the most frequent first',
        image: '{width, height} of the image as displayed',
        model: '{name, version} of the detector',
        inferenceMs:
          'milliseconds of work: the decode, the model (its loading by a new thread left out) and the suppression',
        parameters: '{minConfidence, maxDetections} the run applied',
      },
    },
    classes: cocoLabels,
    about: {
      version: modelVersion,
      licence:
        'MIT: the weights as converted in @vladmandic/human (github.com/vladmandic/human); trained on COCO (CC BY 4.0 annotations)',
      source: 'https://github.com/610265158/mobilenetv3_centernet',
    },
    status: () => status,
    threads: () => pool?.threads() ?? 0,
    run: async (image, { signal, parameters, decode }): Promise<ModelResult> => {
      const applied = effectiveParameters(parameters, objectsCocoDefaults);
      let decodeMs = 0;
      const prepared = await decode(async () => {
        const started = performance.now();
        const input = await prepareInput(image, centerNetInput, signal);
        decodeMs = performance.now() - started;
        return input;
      });
      // A copy of its own, so that it can be transferred to a thread whatever memory sharp handed back.
      const answer = await infer(new Uint8Array(prepared.values), signal);
      const suppressionStarted = performance.now();
      const toImage = imageCoordinates(prepared.placement, prepared.image);
      const candidates = centerNetCandidates(answer.rows).map((c) => ({
        ...c,
        x1: toImage.x(c.x1),
        y1: toImage.y(c.y1),
        x2: toImage.x(c.x2),
        y2: toImage.y(c.y2),
      }));
      const kept = nonMaxSuppression(candidates, { ...applied, iouThreshold });
      const detections = toDetections(kept, { ...prepared.image, labels: cocoLabels });
      // The time of the work itself: waits for a decode slot or a thread, and a thread's loading, are not it.
      const inferenceMs = decodeMs + answer.inferenceMs + (performance.now() - suppressionStarted);
      return {
        detections,
        summary: {
          counts: countByLabel(detections),
          image: prepared.image,
          model: { name: 'centernet-mobilenetv3-coco', version: modelVersion },
          inferenceMs: Math.round(inferenceMs),
          parameters: applied,
        },
      };
    },
    close: async () => {
      await pool?.close();
    },
  };
};
