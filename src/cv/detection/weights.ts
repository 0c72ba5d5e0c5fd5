import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';

/**
 * The built-in detector's weights: CenterNet with a MobileNetV3 backbone trained on COCO, as a TF.js graph
 * model (`centernet.json`, its topology, and `centernet.bin`, 4.2 MB of weights) in the npm package
 * `@vladmandic/human` 3.3.6 (MIT). They are read from the installed package, never fetched, and each file's
 * SHA-256 must be the one below: a missing or changed file makes the model unavailable, with the reason,
 * while the other models keep working.
 */
export const centerNetFiles = {
  package: '@vladmandic/human',
  version: '3.3.6',
  topology: {
    file: 'centernet.json',
    sha256: 'bfb942eaacc5becf738d536663bc4580a0ae9e560722306e6d4dd7fe4a09de05',
  },
  weights: {
    file: 'centernet.bin',
    sha256: '1b635a15009071f506f9f2b3519b31c072c534888989f30d269ffd44734ef7ef',
  },
} as const;

/** What a thread needs to build the model, from bytes that were checked. */
export interface ModelArtifacts {
  modelTopology: unknown;
  weightSpecs: unknown[];
  /** The weights, a copy of their own (a thread's workerData copies it again). */
  weightData: ArrayBuffer;
}

/**
 * Why the weights cannot be used: `problem` names the file and what is wrong with it, for anyone (a tenant
 * reads it in the model listing and in a failed job); `detail` adds the folder and the digests, for the
 * operator (the start-up log and readiness's details).
 */
export type LoadedWeights =
  { ok: true; artifacts: ModelArtifacts } | { ok: false; problem: string; detail: string };

class WeightsError extends Error {
  constructor(
    message: string,
    readonly detail: string,
    options?: ErrorOptions,
  ) {
    super(message, options);
  }
}

/**
 * The folder of the package's models. Its `exports` map hides `models/` and `package.json`, so it is found
 * from the entry point the map does export (`dist/human.node.js`).
 */
export const installedModelsDir = (): string =>
  join(dirname(createRequire(import.meta.url).resolve(centerNetFiles.package)), '..', 'models');

const sha256 = (bytes: Buffer) => createHash('sha256').update(bytes).digest('hex');

const readChecked = (dir: string, { file, sha256: expected }: { file: string; sha256: string }) => {
  let bytes: Buffer;
  try {
    bytes = readFileSync(join(dir, file));
  } catch (error) {
    const { code, message } = error as NodeJS.ErrnoException;
    const missing = code === 'ENOENT';
    throw new WeightsError(
      missing ? `${file} is missing` : `${file} cannot be read`,
      missing ? `${file} is missing from ${dir}` : `${join(dir, file)} cannot be read: ${message}`,
      { cause: error },
    );
  }
  const actual = sha256(bytes);
  if (actual !== expected)
    throw new WeightsError(
      `${file} does not have its SHA-256: it is corrupt or another version`,
      `${join(dir, file)} has SHA-256 ${actual}, not ${expected}: it is corrupt or another version`,
    );
  return bytes;
};

/** Reads and checks the two files in `dir` (the installed package's by default); never throws. */
export const loadCenterNetWeights = (dir?: string): LoadedWeights => {
  try {
    const from = dir ?? installedModelsDir();
    const topology = JSON.parse(readChecked(from, centerNetFiles.topology).toString('utf8')) as {
      modelTopology: unknown;
      weightsManifest: { weights: unknown[] }[];
    };
    const weights = readChecked(from, centerNetFiles.weights);
    return {
      ok: true,
      artifacts: {
        modelTopology: topology.modelTopology,
        weightSpecs: topology.weightsManifest.flatMap((group) => group.weights),
        weightData: new Uint8Array(weights).buffer,
      },
    };
  } catch (error) {
    const { message } = error as Error;
    const detail = error instanceof WeightsError ? error.detail : message;
    return {
      ok: false,
      problem: `The CenterNet weights cannot be used: ${message}`,
      detail: `The CenterNet weights cannot be used: ${detail}`,
    };
  }
};
