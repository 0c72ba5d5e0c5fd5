import { createRequire } from 'node:module';
import { pathToFileURL } from 'node:url';
import { Worker, type ResourceLimits } from 'node:worker_threads';
import { semaphore } from './concurrency.js';

/**
 * A fixed number of worker threads running one script, for CPU-bound work that must not block the event
 * loop (the CV detector's inference, src/cv/detection/). Each thread is started on its first task and kept:
 * whatever it loads (a model) is loaded once. A task that waits for a thread, or runs in one, ends when its
 * signal aborts: a running task's thread is terminated, since synchronous work cannot be interrupted
 * otherwise, and a new one takes its place on the next task. A thread that dies (an uncaught error, its
 * memory limit) fails its task with ThreadFailedError and is replaced the same way.
 *
 * The script answers each message `{id, input}` with `{id, output}` or `{id, error}` (a message).
 */

export class ThreadFailedError extends Error {}

export interface ThreadPoolSettings {
  /** The thread's script: a module URL (a .ts one is run through tsx, as in development and tests). */
  script: URL;
  size: number;
  /** Given to every thread as `workerData` (copied, so a thread cannot change what the next one gets). */
  workerData?: unknown;
  /** The V8 heap limits of each thread; WebAssembly memory is not counted in them. */
  resourceLimits?: ResourceLimits;
}

interface Slot {
  worker: Worker | null;
}

type Reply = { id: number; output: unknown; error?: undefined } | { id: number; error: string };

/**
 * A thread's entry: the script itself, or, for a TypeScript script (development and tests, run through
 * tsx), a small bootstrap that registers tsx's loader in the thread first, since a thread does not inherit
 * the main thread's module hooks.
 */
const entryOf = (script: URL): { entry: string | URL; eval: boolean } => {
  if (!script.pathname.endsWith('.ts')) return { entry: script, eval: false };
  const tsxApi = new URL(
    'dist/esm/api/index.mjs',
    pathToFileURL(createRequire(import.meta.url).resolve('tsx/package.json')),
  );
  return {
    entry: `import(${JSON.stringify(tsxApi.href)})
      .then((tsx) => { tsx.register(); return import(${JSON.stringify(script.href)}); })`,
    eval: true,
  };
};

export const threadPool = <In, Out>({ script, size, workerData, resourceLimits }: ThreadPoolSettings) => {
  const slots = semaphore(size);
  const idle: Slot[] = Array.from({ length: size }, () => ({ worker: null }));
  const live = new Set<Worker>();
  let nextId = 0;
  let closed = false;

  const spawn = (slot: Slot): Worker => {
    const { entry, eval: evaluated } = entryOf(script);
    const worker = new Worker(entry, {
      eval: evaluated,
      workerData,
      ...(resourceLimits ? { resourceLimits } : {}),
    });
    live.add(worker);
    // A thread that ends for any reason (a crash while idle too) is started afresh on its slot's next task.
    worker.once('exit', () => {
      live.delete(worker);
      if (slot.worker === worker) slot.worker = null;
    });
    return worker;
  };

  /** Sends one task to the slot's thread and settles with its answer, its death, or the signal. */
  const runOn = (slot: Slot, input: In, transfer: ArrayBuffer[], signal: AbortSignal): Promise<Out> =>
    new Promise<Out>((resolve, reject) => {
      const worker = slot.worker ?? (slot.worker = spawn(slot));
      const id = (nextId += 1);
      let lastError: Error | null = null;
      const cleanUp = () => {
        worker.off('message', onMessage);
        worker.off('error', onError);
        worker.off('exit', onExit);
        signal.removeEventListener('abort', onAbort);
      };
      const onMessage = (reply: Reply) => {
        if (reply.id !== id) return;
        cleanUp();
        if (reply.error !== undefined) reject(new Error(reply.error));
        else resolve(reply.output as Out);
      };
      const onError = (error: Error) => {
        lastError = error;
      };
      const onExit = (code: number) => {
        cleanUp();
        const why = lastError ? lastError.message : `it exited with code ${code}`;
        reject(new ThreadFailedError(`The worker thread died: ${why}`));
      };
      const onAbort = () => {
        cleanUp();
        if (slot.worker === worker) slot.worker = null;
        void worker.terminate();
        reject(signal.reason as Error);
      };
      worker.on('message', onMessage);
      worker.on('error', onError);
      worker.once('exit', onExit);
      signal.addEventListener('abort', onAbort, { once: true });
      worker.postMessage({ id, input }, transfer);
    });

  return {
    /** Runs one task on a free thread, waiting first come, first served for one. */
    run: async (input: In, { signal, transfer = [] }: { signal: AbortSignal; transfer?: ArrayBuffer[] }) => {
      if (closed) throw new ThreadFailedError('The thread pool is closed');
      try {
        await slots.acquire(signal);
      } catch {
        throw signal.reason as Error;
      }
      const slot = idle.pop()!;
      try {
        return await runOn(slot, input, transfer, signal);
      } finally {
        idle.push(slot);
        slots.release();
      }
    },
    /** Threads started and alive now (0 until the first task). */
    threads: () => live.size,
    /** Ends every thread; tasks still running fail with ThreadFailedError. */
    close: async () => {
      closed = true;
      await Promise.all([...live].map((worker) => worker.terminate()));
    },
  };
};

export type ThreadPool<In, Out> = ReturnType<typeof threadPool<In, Out>>;
