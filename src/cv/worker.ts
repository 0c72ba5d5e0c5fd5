import { randomUUID } from 'node:crypto';
import type { Logger } from 'pino';
import type { PendingCvJob } from '../../projections/cv-jobs.js';
import { eventMetadata, handleCommand } from '../core/command-handler.js';
import { abortable, semaphore } from '../core/concurrency.js';
import { NotFoundError, VersionConflictError } from '../core/errors.js';
import { lostRace, systemContextOf } from '../core/system-context.js';
import type { Clock } from '../core/ids.js';
import { streamName } from '../core/streams.js';
import type { ConsumerOutcome, EventStore, PersistentEvent } from '../eventstore/port.js';
import type { Supervised } from '../core/supervisor.js';
import { superviseGroup } from '../eventstore/supervised-group.js';
import { everySecond } from '../core/sweeper.js';
import { inStreamSpan } from '../observability/tracing.js';
import type { BlobStore } from '../media/blob-store.js';
import { decodeQueue, type DecodeQueue } from '../media/decode-queue.js';
import { defaultDecodeLimits, overBudget, type DecodeLimits } from '../media/header.js';
import { platformPartition } from '../readmodels/aggregate-projection.js';
import type { ReadModelStore } from '../readmodels/port.js';
import { storedHeader } from './image.js';
import {
  cvJobDecider,
  type CvJob,
  type CvJobCommand,
  type CvJobRequested,
  type CvJobState,
} from './decider.js';
import { CvModelError, statusOf, type ModelResult } from './models/port.js';
import type { ModelRegistry } from './models/registry.js';
import { checkResult } from './models/result.js';

export interface CvWorkerSettings {
  /** The longest one run may take (CV_JOB_TIMEOUT); the run is aborted and the job fails with `timeout`. */
  jobTimeoutMs: number;
  /** Jobs this instance runs at once (CV_CONCURRENCY). */
  concurrency: number;
  /** Added to the time-out before a job still `running` counts as abandoned by a dead worker. */
  staleMarginMs: number;
  /** Starts after which an abandoned job fails with `worker_lost` instead of running again. */
  maxAttempts: number;
}

export const defaultCvWorkerSettings = { staleMarginMs: 10_000, maxAttempts: 3 } as const;

/** What the worker reports besides its events: the metrics count it (src/observability). */
export interface CvObserver {
  /** One run: `outcome` is `completed`, the failure's code, or `interrupted` (it runs again later). */
  finished(run: { model: string; outcome: string; seconds: number }): void;
}

export interface CvWorkerDeps {
  eventStore: EventStore;
  readModels: ReadModelStore;
  blobs: BlobStore;
  models: ModelRegistry;
  clock: Clock;
  logger: Logger;
  settings: CvWorkerSettings;
  /** The collection of projections/cv-jobs.ts's pendingCvJobsProjection. */
  pendingCollection: string;
  /** The process's decode queue, shared with uploads; a queue of this worker's own when not given. */
  decodes?: DecodeQueue;
  /** The decode budget (MEDIA_MAX_PIXELS, MEDIA_MAX_DECODED_BYTES); the defaults when not given. */
  decodeLimits?: DecodeLimits;
  observer?: CvObserver;
}

/** The consumer group of the job requests: with several instances, they share the requests. */
export const cvWorkerGroup = 'cv-worker';

const systemContext = systemContextOf('system:cv-worker');

/** Another instance claimed or settled the job first, or it is gone. */
const jobRaceLost = (error: unknown) => lostRace(error) || error instanceof NotFoundError;

/** A failure of this service's own stores while running a job: not the job's fault, so not its outcome. */
class InfrastructureFailure extends Error {}

interface Claimed {
  stream: string;
  job: CvJob;
  state: CvJobState;
  /** The stream version right after this attempt's start: the outcome is appended at exactly this one. */
  version: number;
}

/**
 * Runs CV jobs.
 * - Requests arrive through the persistent subscription `cv-worker` (on CvJobRequested). The handler waits
 *   for a free slot, claims the job by appending CvJobStarted at the version it read, acknowledges, and runs
 *   the job in the background. Of several instances racing for a job exactly one wins the claim; a crash
 *   before the claim leaves the request unacknowledged, so it is delivered again.
 * - A run reads the image from the blob store, runs the model under the time-out, checks the result, and
 *   appends CvJobCompleted or CvJobFailed at the version right after its own start. If its start was taken
 *   over in the meantime, that append fails and the outcome is dropped: a job never completes twice.
 * - A sweep every second looks for jobs still `running` past the time-out plus a margin (their
 *   worker died, or was stopped) and runs them again as a new attempt, up to `maxAttempts` starts; after
 *   that they fail with `worker_lost`. It also picks up jobs still `queued` that long (a request that was
 *   parked), so no job is lost.
 */
export const cvWorker = (deps: CvWorkerDeps) => {
  const { eventStore, settings, logger } = deps;
  const decodes = deps.decodes ?? decodeQueue({ concurrency: 1, maxWaiting: 0 });
  const decodeLimits = deps.decodeLimits ?? defaultDecodeLimits;
  const instance = `instance:${randomUUID().slice(0, 8)}`;
  const staleAfterMs = settings.jobTimeoutMs + settings.staleMarginMs;
  const slots = semaphore(settings.concurrency);
  /** Jobs this instance is claiming or running, by stream name. */
  const inFlight = new Set<string>();
  const tasks = new Set<Promise<void>>();
  /** Aborted by stop; a new one per start, since the duties of a process can be stopped and started again. */
  let stopping = new AbortController();
  /** Cuts the runs still in progress when a stop's deadline passes (see stop). */
  let interrupting = new AbortController();
  let subscription: Supervised | null = null;

  const track = (task: Promise<void>) => {
    tasks.add(task);
    void task.finally(() => tasks.delete(task));
  };

  /** Starts an attempt if this instance wins the job; null when there is nothing for it to do. */
  const claim = async (tenantId: string, jobId: string, causationId: string): Promise<Claimed | null> => {
    const stream = streamName('cvjob', tenantId, jobId);
    try {
      const result = await handleCommand(
        eventStore,
        cvJobDecider,
        stream,
        {
          type: 'StartJob',
          now: deps.clock(),
          staleAfterMs,
          maxAttempts: settings.maxAttempts,
          startedBy: instance,
        },
        systemContext(tenantId, deps.clock(), causationId),
      );
      if (result.events.at(-1)?.type !== 'CvJobStarted' || result.state.status === 'absent') return null;
      return { stream, job: result.state.job, state: result.state, version: result.version };
    } catch (error) {
      if (jobRaceLost(error)) return null;
      throw error;
    }
  };

  const execute = async (job: CvJob, signal: AbortSignal): Promise<ModelResult> => {
    const model = deps.models.get(job.model);
    if (!model) throw new CvModelError('model_unknown', `The model ${job.model} is not configured any more`);
    let image: Buffer | null;
    try {
      image = await deps.blobs.get(job.sha256);
    } catch (error) {
      throw new InfrastructureFailure(`The blob store failed: ${(error as Error).message}`);
    }
    if (!image)
      throw new CvModelError('media_missing', `The bytes of medium ${job.mediaId} are not in the blob store`);
    const bytes = image;
    // The size, channels and bits come from the header, in JavaScript: no decode only to learn them. Images
    // stored before the budget was lowered are refused here rather than decoded.
    const over = overBudget(storedHeader(bytes), decodeLimits);
    if (over) throw new CvModelError('media_unreadable', `The image is not decoded: ${over}`);
    const status = statusOf(model);
    if (!status.available) throw new CvModelError('model_unavailable', status.problem);
    return abortable(signal, async () => {
      try {
        const decode = <T>(work: () => Promise<T>) => decodes.job(work, signal);
        return checkResult(await model.run(bytes, { signal, parameters: job.parameters, decode }));
      } catch (error) {
        if (error instanceof CvModelError || signal.aborted) throw error;
        throw new CvModelError('model_error', `The model ${model.name} failed: ${(error as Error).message}`);
      }
    });
  };

  /** Appends the attempt's outcome right after its start; a start taken over since makes it a no-op. */
  const record = async (claimed: Claimed, command: CvJobCommand) => {
    const { tenantId } = claimed.job;
    const context = systemContext(tenantId, deps.clock(), claimed.job.id);
    const events = cvJobDecider.decide(command, claimed.state).map((event) => ({
      id: context.newEventId(),
      type: event.type,
      data: event.data,
      metadata: eventMetadata(context),
    }));
    try {
      await eventStore.appendToStream(claimed.stream, events, claimed.version);
    } catch (error) {
      if (!(error instanceof VersionConflictError)) throw error;
      logger.warn(
        { jobId: claimed.job.id, attempt: claimed.job.attempts },
        'CV job attempt was taken over by another worker; its outcome is dropped',
      );
    }
  };

  const run = async (claimed: Claimed) => {
    const { job } = claimed;
    const attempt = job.attempts;
    const controller = new AbortController();
    const timer = setTimeout(
      () =>
        controller.abort(
          new CvModelError('timeout', `The job did not finish within ${settings.jobTimeoutMs} ms`),
        ),
      settings.jobTimeoutMs,
    );
    const onStop = () => controller.abort(new Error('the worker is stopping'));
    const cut = interrupting.signal;
    cut.addEventListener('abort', onStop, { once: true });
    const started = Date.now();
    let command: CvJobCommand;
    try {
      const result = await execute(job, controller.signal);
      command = { type: 'CompleteJob', attempt, result };
    } catch (error) {
      if (cut.aborted || error instanceof InfrastructureFailure) {
        // Left running: once its start is stale, the sweep (here or on another instance) runs it again.
        logger.warn({ err: error, jobId: job.id, attempt }, 'CV job interrupted; it will run again');
        deps.observer?.finished({
          model: job.model,
          outcome: 'interrupted',
          seconds: (Date.now() - started) / 1000,
        });
        return;
      }
      const failure =
        error instanceof CvModelError
          ? error
          : new CvModelError('model_error', `The run failed: ${(error as Error).message}`);
      command = { type: 'FailJob', attempt, error: { code: failure.code, message: failure.message } };
    } finally {
      clearTimeout(timer);
      cut.removeEventListener('abort', onStop);
    }
    logger.info(
      { jobId: job.id, model: job.model, attempt, outcome: command.type, ms: Date.now() - started },
      'CV job finished',
    );
    deps.observer?.finished({
      model: job.model,
      outcome: command.type === 'CompleteJob' ? 'completed' : command.error.code,
      seconds: (Date.now() - started) / 1000,
    });
    await record(claimed, command);
  };

  /** With traces on, a run is the span `cv job`, in the trace of the job's request (CvJobRequested). */
  const tracedRun = (claimed: Claimed) =>
    inStreamSpan(
      'cv job',
      { eventStore, stream: claimed.stream, at: 'first' },
      {
        attributes: {
          'cv.job_id': claimed.job.id,
          'cv.model': claimed.job.model,
          'cv.attempt': claimed.job.attempts,
        },
      },
      () => run(claimed),
    );

  /** Claims and runs a job found by the sweep, unless this instance is already on it. */
  const kick = (tenantId: string, jobId: string) => {
    const stream = streamName('cvjob', tenantId, jobId);
    if (inFlight.has(stream) || stopping.signal.aborted) return;
    inFlight.add(stream);
    track(
      (async () => {
        try {
          await slots.acquire(stopping.signal);
        } catch {
          inFlight.delete(stream);
          return;
        }
        try {
          const claimed = await claim(tenantId, jobId, jobId);
          if (claimed) await tracedRun(claimed);
        } catch (error) {
          logger.error({ err: error, jobId }, 'CV job run failed');
        } finally {
          inFlight.delete(stream);
          slots.release();
        }
      })(),
    );
  };

  /**
   * The subscription's handler: waits for a slot, claims, acknowledges once the claim is written (or there
   * was nothing to claim), and runs in the background. A store failure before the claim asks for the
   * request again.
   */
  const onRequested = async ({ event }: PersistentEvent): Promise<ConsumerOutcome> => {
    if (event.type !== 'CvJobRequested') return { kind: 'ack' };
    const tenantId = event.metadata.tenantId;
    const { jobId } = event.data as CvJobRequested['data'];
    const stream = streamName('cvjob', tenantId, jobId);
    if (inFlight.has(stream)) return { kind: 'ack' };
    try {
      await slots.acquire(stopping.signal);
    } catch {
      // Stopping while the request waited for a slot. A nack would have the embedded store deliver it again
      // at once, to this stopping consumer, until it parks; instead the job stays queued, unclaimed, and the
      // sweep of whichever instance runs next picks it up once it has been queued past the stale limit.
      return { kind: 'ack' };
    }
    inFlight.add(stream);
    let claimed: Claimed | null;
    try {
      claimed = await claim(tenantId, jobId, event.id);
    } catch (error) {
      inFlight.delete(stream);
      slots.release();
      logger.warn({ err: error, jobId }, 'CV job not claimed; the request will be delivered again');
      return { kind: 'nack', action: 'retry', reason: (error as Error).message };
    }
    if (!claimed) {
      inFlight.delete(stream);
      slots.release();
      return { kind: 'ack' };
    }
    const job = claimed;
    track(
      tracedRun(job)
        .catch((error: unknown) => logger.error({ err: error, jobId }, 'CV job run failed'))
        .finally(() => {
          inFlight.delete(stream);
          slots.release();
        }),
    );
    return { kind: 'ack' };
  };

  /** Jobs whose run or request was abandoned: started, or requested, longer ago than the stale limit. */
  const sweepStale = async () => {
    const before = new Date(deps.clock().getTime() - staleAfterMs).toISOString();
    const stale = (status: 'running' | 'queued', field: 'startedAt' | 'createdAt') =>
      deps.readModels.list<PendingCvJob>(deps.pendingCollection, {
        tenantId: platformPartition,
        filters: [
          { op: 'eq', field: 'status', value: status },
          { op: 'lte', field, value: before },
        ],
        sort: { field, direction: 'asc' },
        limit: 100,
      });
    for (const job of [...(await stale('running', 'startedAt')), ...(await stale('queued', 'createdAt'))]) {
      kick(job.tenantId, job.id);
    }
  };

  const sweeper = everySecond(sweepStale, {
    paused: () => stopping.signal.aborted,
    onError: (error) => logger.error({ err: error }, 'CV job sweep failed'),
  });

  return {
    instance,
    /** Runs one sweep now (tests). */
    sweep: () => sweepStale(),
    start: () => {
      stopping = new AbortController();
      subscription = superviseGroup(
        eventStore,
        cvWorkerGroup,
        { filter: { eventTypes: ['CvJobRequested'] }, startFrom: 'start', maxRetryCount: 10 },
        onRequested,
        { logger },
      );
      sweeper.start();
    },
    consumers: () => (subscription ? [subscription.status()] : []),
    /**
     * Takes no new job. Runs in progress may finish until `deadlineMs` (0 by default); then they are cut and
     * record nothing: like runs of a crashed instance, the sweep runs them again once their start is stale.
     */
    stop: async ({ deadlineMs = 0 }: { deadlineMs?: number } = {}) => {
      stopping.abort();
      const deadline = setTimeout(() => interrupting.abort(), deadlineMs);
      await sweeper.stop();
      await subscription?.stop();
      await Promise.all([...tasks]);
      clearTimeout(deadline);
      interrupting = new AbortController();
    },
  };
};

export type CvWorker = ReturnType<typeof cvWorker>;
