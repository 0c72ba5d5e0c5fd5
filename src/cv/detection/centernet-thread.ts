/**
 * A worker thread of the built-in detector (src/core/thread-pool.ts runs it): loads CenterNet once, from
 * the checked bytes in `workerData`, on TF.js's WebAssembly backend, then answers each image with the
 * model's raw detections. Everything else (decoding, suppression, labels) is done by the caller: this file
 * holds only what must run off the event loop.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import * as tf from '@tensorflow/tfjs-core';
import { loadGraphModel } from '@tensorflow/tfjs-converter';
import { setWasmPaths } from '@tensorflow/tfjs-backend-wasm';
import type { ModelArtifacts } from './weights.js';
import { centerNetInput, type CenterNetAnswer, type CenterNetTask } from './centernet.js';

/** The one output the service reads: 100 rows of x1, y1, x2, y2 (input pixels), score, class index. */
const detectionsOutput = 'tower_0/detections';

const load = async () => {
  const backendDir = dirname(createRequire(import.meta.url).resolve('@tensorflow/tfjs-backend-wasm'));
  // The .wasm files sit beside the backend's entry point; in Node they are read from disk, not fetched.
  setWasmPaths(join(backendDir, '/'));
  await tf.setBackend('wasm');
  await tf.ready();
  const artifacts = workerData as ModelArtifacts;
  return loadGraphModel(tf.io.fromMemory(artifacts));
};

const model = load();
// Keep the failure for the tasks: each answers with it, rather than the thread dying unheard.
model.catch(() => undefined);

const infer = async ({ pixels }: CenterNetTask): Promise<CenterNetAnswer> => {
  const graph = await model;
  const started = performance.now();
  const { width, height } = centerNetInput;
  const input = tf.tidy(() => tf.tensor4d(Float32Array.from(pixels), [1, height, width, 3]));
  const output = graph.execute(input, detectionsOutput) as tf.Tensor;
  try {
    const rows = (await output.data()) as Float32Array;
    return { rows, inferenceMs: performance.now() - started };
  } finally {
    tf.dispose([input, output]);
  }
};

parentPort!.on('message', ({ id, input }: { id: number; input: CenterNetTask }) => {
  infer(input).then(
    (output) => parentPort!.postMessage({ id, output }, [output.rows.buffer as ArrayBuffer]),
    (error: unknown) => parentPort!.postMessage({ id, error: (error as Error).message }),
  );
});
