import type { Decider, DomainEvent } from '../core/decider.js';
import { changeStamps, createdFrom } from '../core/decider.js';
import { ConflictError, NotFoundError } from '../core/errors.js';
import type { DetectionParameters, FailureCode, ModelResult } from './models/port.js';

/**
 * A computer-vision job: one model run over one image of one observation.
 *
 *   queued ──Start──► running ──Complete──► completed
 *                       │  ▲
 *                       │  └── Start again once the run is stale (its worker died): a new attempt
 *                       └──Fail──► failed
 *
 * Every start is appended at the version its worker read, so of several workers racing for a job exactly
 * one starts it; every outcome names the attempt it belongs to and is appended at the version right after
 * that attempt's start, so an attempt that was taken over can never record a second outcome.
 */

export type CvJobStatus = 'queued' | 'running' | 'completed' | 'failed';

export const cvJobStatuses: readonly CvJobStatus[] = ['queued', 'running', 'completed', 'failed'];

export interface CvJobError {
  code: FailureCode;
  message: string;
}

/** The resource as clients see it, and the document of the cv_jobs read model. */
export interface CvJob {
  id: string;
  tenantId: string;
  observationId: string;
  mediaId: string;
  /** The SHA-256 of the image's bytes: the key of the blob the job reads. */
  sha256: string;
  model: string;
  /** What the job asked of the model (`{}`: its defaults); the result's summary says what it applied. */
  parameters: DetectionParameters;
  status: CvJobStatus;
  /** How many times a worker started the job (more than 1 only after a worker died mid-run). */
  attempts: number;
  result: ModelResult | null;
  error: CvJobError | null;
  createdAt: string;
  startedAt: string | null;
  finishedAt: string | null;
  updatedAt: string;
  version: number;
}

/**
 * `staleAfterMs` is the running attempt's, as its worker recorded it (null, or absent, when no attempt is
 * running or its start recorded none): kept beside the job, which is what the API shows.
 */
export type CvJobState =
  { status: 'absent' } | { status: 'present'; job: CvJob; staleAfterMs?: number | null };

interface Target {
  jobId: string;
  observationId: string;
  model: string;
}

/** `parameters` is absent from requests made before jobs took parameters: they ran with the defaults. */
export type CvJobRequested = DomainEvent<
  'CvJobRequested',
  Target & { mediaId: string; sha256: string; parameters?: DetectionParameters }
>;
/**
 * `staleAfterMs`: how long the starting worker may run it before another may presume it dead (its own
 * CV_JOB_TIMEOUT and a margin), so that a worker set otherwise respects it; absent on starts recorded before.
 */
export type CvJobStarted = DomainEvent<
  'CvJobStarted',
  { jobId: string; attempt: number; startedBy: string; staleAfterMs?: number }
>;
export type CvJobCompleted = DomainEvent<'CvJobCompleted', Target & { attempt: number; result: ModelResult }>;
export type CvJobFailed = DomainEvent<'CvJobFailed', Target & { attempt: number; error: CvJobError }>;

export type CvJobEvent = CvJobRequested | CvJobStarted | CvJobCompleted | CvJobFailed;

export const cvJobEventTypes: readonly CvJobEvent['type'][] = [
  'CvJobRequested',
  'CvJobStarted',
  'CvJobCompleted',
  'CvJobFailed',
];

export type CvJobCommand =
  | {
      type: 'RequestJob';
      jobId: string;
      observationId: string;
      mediaId: string;
      sha256: string;
      model: string;
      parameters: DetectionParameters;
    }
  | {
      type: 'StartJob';
      now: Date;
      /**
       * How long this worker may run the job before another may presume it dead; a running job whose start
       * recorded none was abandoned once its start is older than this.
       */
      staleAfterMs: number;
      /** Starts after which an abandoned job fails with `worker_lost` instead of starting again. */
      maxAttempts: number;
      startedBy: string;
    }
  | { type: 'CompleteJob'; attempt: number; result: ModelResult }
  | { type: 'FailJob'; attempt: number; error: CvJobError };

/** The job a state holds, or a 404. */
export const jobOf = (state: CvJobState): CvJob => {
  if (state.status === 'absent') throw new NotFoundError('The CV job does not exist');
  return state.job;
};

/** Running, and started longer ago than `staleAfterMs`: its worker is presumed dead. */
export const isStale = (job: CvJob, now: Date, staleAfterMs: number): boolean =>
  job.status === 'running' && Date.parse(job.startedAt ?? '') + staleAfterMs <= now.getTime();

const target = (job: CvJob): Target => ({
  jobId: job.id,
  observationId: job.observationId,
  model: job.model,
});

/** An outcome belongs to the attempt in progress, and to no other. */
const assertCurrentAttempt = (job: CvJob, attempt: number) => {
  if (job.status !== 'running' || job.attempts !== attempt) {
    throw new ConflictError(
      `Attempt ${attempt} of CV job ${job.id} is not in progress (the job is ${job.status}, attempt ${job.attempts})`,
    );
  }
};

const decide = (command: CvJobCommand, state: CvJobState): CvJobEvent[] => {
  switch (command.type) {
    case 'RequestJob': {
      if (state.status !== 'absent') throw new ConflictError(`CV job ${command.jobId} already exists`);
      const { type: _type, ...data } = command;
      return [{ type: 'CvJobRequested', data }];
    }
    case 'StartJob': {
      const job = jobOf(state);
      if (job.status === 'completed' || job.status === 'failed') return [];
      // The running attempt's own time-out, where its start recorded one.
      const staleAfterMs = (state.status === 'present' ? state.staleAfterMs : null) ?? command.staleAfterMs;
      if (job.status === 'running' && !isStale(job, command.now, staleAfterMs)) {
        throw new ConflictError(`CV job ${job.id} is running`);
      }
      if (job.status === 'running' && job.attempts >= command.maxAttempts) {
        return [
          {
            type: 'CvJobFailed',
            data: {
              ...target(job),
              attempt: job.attempts,
              error: {
                code: 'worker_lost',
                message: `The job was started ${job.attempts} times and no worker finished it`,
              },
            },
          },
        ];
      }
      return [
        {
          type: 'CvJobStarted',
          data: {
            jobId: job.id,
            attempt: job.attempts + 1,
            startedBy: command.startedBy,
            staleAfterMs: command.staleAfterMs,
          },
        },
      ];
    }
    case 'CompleteJob': {
      const job = jobOf(state);
      assertCurrentAttempt(job, command.attempt);
      return [
        {
          type: 'CvJobCompleted',
          data: { ...target(job), attempt: command.attempt, result: command.result },
        },
      ];
    }
    case 'FailJob': {
      const job = jobOf(state);
      assertCurrentAttempt(job, command.attempt);
      return [
        { type: 'CvJobFailed', data: { ...target(job), attempt: command.attempt, error: command.error } },
      ];
    }
  }
};

const evolve: Decider<CvJobState, CvJobCommand, CvJobEvent>['evolve'] = (state, event) => {
  const at = event.metadata.occurredAt;
  if (event.type === 'CvJobRequested') {
    return {
      status: 'present',
      job: {
        ...createdFrom(event, 'jobId'),
        parameters: event.data.parameters ?? {},
        status: 'queued',
        attempts: 0,
        result: null,
        error: null,
        createdAt: at,
        startedAt: null,
        finishedAt: null,
        updatedAt: at,
        version: event.streamVersion,
      },
    };
  }
  if (state.status === 'absent') return state;
  const job = { ...state.job, ...changeStamps(event) };
  switch (event.type) {
    case 'CvJobStarted':
      return {
        status: 'present',
        job: { ...job, status: 'running', attempts: event.data.attempt, startedAt: at },
        staleAfterMs: event.data.staleAfterMs ?? null,
      };
    case 'CvJobCompleted':
      return {
        status: 'present',
        job: { ...job, status: 'completed', result: event.data.result, finishedAt: at },
      };
    case 'CvJobFailed':
      return {
        status: 'present',
        job: { ...job, status: 'failed', error: event.data.error, finishedAt: at },
      };
  }
};

export const cvJobDecider: Decider<CvJobState, CvJobCommand, CvJobEvent> = {
  aggregate: 'cvjob',
  initialState: () => ({ status: 'absent' }),
  decide,
  evolve,
};
