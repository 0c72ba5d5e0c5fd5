import sharp from 'sharp';
import { UnavailableError } from '../core/errors.js';

/**
 * The one queue every image decode of a process goes through: uploads (src/media/api.ts) and the CV
 * worker's pixel reads (src/cv/worker.ts). sharp runs each decode on a thread of libuv's pool, which
 * password hashing (scrypt) and file I/O share and which has 4 threads unless UV_THREADPOOL_SIZE says
 * otherwise; four decodes at once leave a login nothing to run on. At most `concurrency` decodes run at a
 * time, so the rest of the pool stays free, and the memory they hold is bounded by `concurrency` times the
 * decode budget (MEDIA_MAX_DECODED_BYTES).
 *
 * Uploads wait in the queue up to `maxWaiting` deep; beyond that one is refused at once with 503 and a
 * Retry-After, rather than piling up. CV jobs are not refused: they wait (CV_CONCURRENCY bounds them), until
 * their signal aborts (the job's time-out, or a stop). The queue is first come, first served.
 */
export interface DecodeQueueSettings {
  /** Decodes at once (MEDIA_DECODE_CONCURRENCY). */
  concurrency: number;
  /** Uploads that may wait for a decode before more are refused with 503 (MEDIA_DECODE_QUEUE). */
  maxWaiting: number;
}

export interface DecodeQueueStatus {
  running: number;
  /** Uploads and CV jobs waiting. */
  waiting: number;
  /** Tasks run to the end since the start, and uploads refused because the queue was full. */
  decoded: number;
  refused: number;
}

interface Waiter {
  kind: 'upload' | 'job';
  start: () => void;
}

/** The mean of the last decodes' durations weighs this much of each new one (for Retry-After). */
const smoothing = 0.2;

export const decodeQueue = ({ concurrency, maxWaiting }: DecodeQueueSettings) => {
  // libvips threads per decode: one, so that a decode takes one core, not all of them (the default of sharp
  // builds with jemalloc); and no operation cache, since every image is decoded once.
  sharp.concurrency(1);
  sharp.cache(false);
  let running = 0;
  let decoded = 0;
  let refused = 0;
  let meanMs = 500;
  const waiting: Waiter[] = [];
  const uploadsWaiting = () => waiting.filter((waiter) => waiter.kind === 'upload').length;

  const release = () => {
    const next = waiting.shift();
    if (next) next.start();
    else running -= 1;
  };

  const acquire = (kind: Waiter['kind'], signal?: AbortSignal): Promise<void> =>
    new Promise((resolve, reject) => {
      if (signal?.aborted) return reject(signal.reason as Error);
      if (running < concurrency) {
        running += 1;
        return resolve();
      }
      const waiter: Waiter = {
        kind,
        start: () => {
          signal?.removeEventListener('abort', cancel);
          resolve();
        },
      };
      const cancel = () => {
        const index = waiting.indexOf(waiter);
        if (index >= 0) waiting.splice(index, 1);
        reject(signal?.reason as Error);
      };
      signal?.addEventListener('abort', cancel, { once: true });
      waiting.push(waiter);
    });

  const run = async <T>(kind: Waiter['kind'], task: () => Promise<T>, signal?: AbortSignal): Promise<T> => {
    await acquire(kind, signal);
    const started = performance.now();
    try {
      return await task();
    } finally {
      meanMs += smoothing * (performance.now() - started - meanMs);
      decoded += 1;
      release();
    }
  };

  return {
    /**
     * Runs an upload's decode once a slot is free; refuses it with 503 and Retry-After (the estimated time
     * for the queue ahead of it to drain) when `maxWaiting` uploads already wait.
     */
    upload: <T>(task: () => Promise<T>, signal?: AbortSignal): Promise<T> => {
      if (running >= concurrency && uploadsWaiting() >= maxWaiting) {
        refused += 1;
        const seconds = Math.max(1, Math.ceil(((waiting.length + running) * meanMs) / concurrency / 1000));
        throw new UnavailableError(
          `${waiting.length} images are already waiting to be decoded (MEDIA_DECODE_QUEUE=${maxWaiting}); retry later`,
          seconds,
        );
      }
      return run('upload', task, signal);
    },
    /** Runs a CV job's decode once a slot is free; never refused, but given up when the signal aborts. */
    job: <T>(task: () => Promise<T>, signal?: AbortSignal): Promise<T> => run('job', task, signal),
    status: (): DecodeQueueStatus => ({ running, waiting: waiting.length, decoded, refused }),
  };
};

export type DecodeQueue = ReturnType<typeof decodeQueue>;
