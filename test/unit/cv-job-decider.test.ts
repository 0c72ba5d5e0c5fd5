import { expect } from 'chai';
import { ConflictError, NotFoundError } from '../../src/core/errors.js';
import { cvJobDecider, isStale, type CvJobCommand, type CvJobEvent } from '../../src/cv/decider.js';
import type { ModelResult } from '../../src/cv/models/port.js';
import { deciderSpec } from '../support/decider-spec.js';

const given = deciderSpec(cvJobDecider);

/** decider-spec stamps the n-th given event at 2026-01-01T00:00:0n. */
const at = (seconds: number) => new Date(Date.UTC(2026, 0, 1, 0, 0, seconds));
const target = { jobId: 'j_1', observationId: 'o_1', model: 'object-proposals' };
const requested: CvJobEvent = {
  type: 'CvJobRequested',
  data: { ...target, mediaId: 'm_1', sha256: 'ab'.repeat(32), parameters: { minConfidence: 0.5 } },
};
/** A start by instance a, which may run the job 10 s (or `staleAfterMs`) before it counts as abandoned. */
const started = (attempt: number, staleAfterMs = 10_000): CvJobEvent => ({
  type: 'CvJobStarted',
  data: { jobId: 'j_1', attempt, startedBy: 'instance:a', staleAfterMs },
});
const result: ModelResult = {
  detections: [{ label: 'dark-object', confidence: 0.8, bbox: { x: 0.1, y: 0.2, width: 0.3, height: 0.4 } }],
  summary: { objects: 1 },
};
const completed = (attempt: number): CvJobEvent => ({
  type: 'CvJobCompleted',
  data: { ...target, attempt, result },
});
const failed = (attempt: number): CvJobEvent => ({
  type: 'CvJobFailed',
  data: { ...target, attempt, error: { code: 'timeout', message: 'too slow' } },
});
/** 10 s after its start a run is stale; three starts at most. */
const start = (seconds: number, staleAfterMs = 10_000): CvJobCommand => ({
  type: 'StartJob',
  now: at(seconds),
  staleAfterMs,
  maxAttempts: 3,
  startedBy: 'instance:b',
});

describe('the CV job decider', () => {
  it('requests a job once', () => {
    const command = {
      type: 'RequestJob',
      jobId: 'j_1',
      observationId: 'o_1',
      mediaId: 'm_1',
      sha256: 'ab'.repeat(32),
      model: 'object-proposals',
      parameters: { minConfidence: 0.5 },
    } as const;
    given([]).when(command).then([requested]);
    given([requested])
      .when(command)
      .thenThrows(ConflictError, /already exists/);
  });

  it('folds a request made before jobs took parameters into a job with none (the defaults)', () => {
    const { parameters: _parameters, ...older } = requested.data;
    const state = given([{ type: 'CvJobRequested', data: older }]).state;
    expect(state.status === 'present' && state.job.parameters).to.deep.equal({});
  });

  it('folds a request into a queued job', () => {
    expect(given([requested]).state).to.deep.equal({
      status: 'present',
      job: {
        id: 'j_1',
        tenantId: 't_test',
        observationId: 'o_1',
        mediaId: 'm_1',
        sha256: 'ab'.repeat(32),
        model: 'object-proposals',
        parameters: { minConfidence: 0.5 },
        status: 'queued',
        attempts: 0,
        result: null,
        error: null,
        createdAt: at(0).toISOString(),
        startedAt: null,
        finishedAt: null,
        updatedAt: at(0).toISOString(),
        version: 0,
      },
    });
  });

  it('starts a queued job as attempt 1', () => {
    given([requested])
      .when(start(1))
      .then([
        {
          type: 'CvJobStarted',
          data: { jobId: 'j_1', attempt: 1, startedBy: 'instance:b', staleAfterMs: 10_000 },
        },
      ]);
  });

  it('refuses to start a job that is running and not stale: another worker has it', () => {
    given([requested, started(1)])
      .when(start(5))
      .thenThrows(ConflictError, /running/);
  });

  it('starts a stale running job again as the next attempt', () => {
    // Started at second 1; stale from second 11.
    given([requested, started(1)])
      .when(start(11))
      .then([
        {
          type: 'CvJobStarted',
          data: { jobId: 'j_1', attempt: 2, startedBy: 'instance:b', staleAfterMs: 10_000 },
        },
      ]);
  });

  it("leaves a run alone for its own worker's time-out, whatever the time-out of the worker that looks", () => {
    // Instance a may run it 70 s: at second 30 it is still a's, also for a worker set to 10 s.
    given([requested, started(1, 70_000)])
      .when(start(30, 10_000))
      .thenThrows(ConflictError, /running/);
    given([requested, started(1, 70_000)])
      .when(start(71, 10_000))
      .then([
        {
          type: 'CvJobStarted',
          data: { jobId: 'j_1', attempt: 2, startedBy: 'instance:b', staleAfterMs: 10_000 },
        },
      ]);
    // A start recorded without its time-out (before it was recorded): the looking worker's own.
    const older: CvJobEvent = { type: 'CvJobStarted', data: { jobId: 'j_1', attempt: 1, startedBy: 'x' } };
    given([requested, older])
      .when(start(5, 3_000))
      .then([
        {
          type: 'CvJobStarted',
          data: { jobId: 'j_1', attempt: 2, startedBy: 'instance:b', staleAfterMs: 3_000 },
        },
      ]);
  });

  it('fails a stale job with worker_lost once it was started the most times allowed', () => {
    given([requested, started(1), started(2), started(3)])
      .when(start(30))
      .then([
        {
          type: 'CvJobFailed',
          data: {
            ...target,
            attempt: 3,
            error: { code: 'worker_lost', message: 'The job was started 3 times and no worker finished it' },
          },
        },
      ]);
  });

  it('does nothing to start a finished job (a redelivered request)', () => {
    given([requested, started(1), completed(1)])
      .when(start(100))
      .then([]);
    given([requested, started(1), failed(1)])
      .when(start(100))
      .then([]);
  });

  it('completes the attempt in progress with the result, naming the observation and model', () => {
    given([requested, started(1)])
      .when({ type: 'CompleteJob', attempt: 1, result })
      .then([completed(1)]);
    const state = given([requested, started(1), completed(1)]).state;
    expect(state.status === 'present' && state.job).to.deep.include({
      status: 'completed',
      attempts: 1,
      result,
      error: null,
      startedAt: at(1).toISOString(),
      finishedAt: at(2).toISOString(),
      version: 2,
    });
  });

  it('fails the attempt in progress with the error', () => {
    const error = { code: 'media_unreadable', message: 'The image cannot be decoded' } as const;
    given([requested, started(1)])
      .when({ type: 'FailJob', attempt: 1, error })
      .then([{ type: 'CvJobFailed', data: { ...target, attempt: 1, error } }]);
    const state = given([requested, started(1), failed(1)]).state;
    expect(state.status === 'present' && state.job).to.deep.include({
      status: 'failed',
      result: null,
      error: { code: 'timeout', message: 'too slow' },
    });
  });

  it('never records a second outcome: not for a finished job, not for an attempt taken over', () => {
    given([requested, started(1), completed(1)])
      .when({ type: 'CompleteJob', attempt: 1, result })
      .thenThrows(ConflictError, /not in progress/);
    given([requested, started(1), completed(1)])
      .when({ type: 'FailJob', attempt: 1, error: { code: 'timeout', message: 'x' } })
      .thenThrows(ConflictError);
    // Attempt 1's worker comes back after attempt 2 started.
    given([requested, started(1), started(2)])
      .when({ type: 'CompleteJob', attempt: 1, result })
      .thenThrows(ConflictError, /Attempt 1/);
    given([requested]).when({ type: 'CompleteJob', attempt: 0, result }).thenThrows(ConflictError);
  });

  it('knows no job it was never asked for', () => {
    given([]).when(start(0)).thenThrows(NotFoundError);
    given([]).when({ type: 'CompleteJob', attempt: 1, result }).thenThrows(NotFoundError);
  });

  it('calls a running job stale only past the limit', () => {
    const state = given([requested, started(1)]).state;
    if (state.status !== 'present') throw new Error('absent');
    expect(isStale(state.job, at(10), 10_000)).to.equal(false);
    expect(isStale(state.job, at(11), 10_000)).to.equal(true);
    const queued = given([requested]).state;
    if (queued.status !== 'present') throw new Error('absent');
    expect(isStale(queued.job, at(100), 10_000)).to.equal(false);
  });
});
