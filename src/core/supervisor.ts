import type { Logger } from 'pino';

/**
 * Consumers (projection runners, the webhook projector and notifier, the CV worker) run under a supervisor:
 * when one fails (a store error, a full disk, a bug) it is started again with back-off, from its checkpoint,
 * so it never stays dead. Its state is what readiness, metrics and `projections status` show.
 */
export type ConsumerState =
  /** Consuming. */
  | 'running'
  /** Failed; waiting for its back-off before the next start. `lastError` says why. */
  | 'retrying'
  /** Another process owns this duty on the embedded store; this one takes over if that one goes away. */
  | 'standby'
  | 'stopped';

export interface ConsumerStatus {
  name: string;
  state: ConsumerState;
  /** The last failure, kept after a recovery as history: `recoveredAt` says whether it is current. */
  lastError: string | null;
  lastErrorAt: string | null;
  /** When it was started again after `lastError` and has run since; null while that failure is current. */
  recoveredAt: string | null;
  /** How many times the supervisor started it again after a failure. */
  restarts: number;
}

/** The status of a consumer that is not running here: not started, stopped, or standing by. */
export const notRunning = (
  name: string,
  state: 'stopped' | 'standby' = 'stopped',
  lastError: string | null = null,
): ConsumerStatus => ({ name, state, lastError, lastErrorAt: null, recoveredAt: null, restarts: 0 });

/** A running consumer: `done` settles when it ends; a rejection is a failure to recover from. */
export interface Running {
  readonly done: Promise<void>;
  stop(): Promise<void>;
}

export interface Supervised {
  readonly name: string;
  status(): ConsumerStatus;
  /** Stops the consumer and any pending restart; resolves when the consumer has stopped. */
  stop(): Promise<void>;
}

export interface BackOff {
  initialMs: number;
  maxMs: number;
  /** A consumer that ran this long since its last start is healthy again: the next failure starts over. */
  resetAfterMs: number;
}

export const defaultBackOff: BackOff = { initialMs: 250, maxMs: 10_000, resetAfterMs: 30_000 };

/** The delay before restart number `failures` (1-based): doubling from `initialMs`, capped at `maxMs`. */
export const backOffDelay = (failures: number, { initialMs, maxMs }: BackOff): number =>
  Math.min(maxMs, initialMs * 2 ** Math.max(0, failures - 1));

/**
 * Runs `start` and starts it again whenever it fails, either by throwing or by its `done` rejecting.
 * Stopping cancels a pending restart and waits for the running consumer to stop.
 */
export const supervise = (
  name: string,
  start: () => Running | Promise<Running>,
  { logger, backOff = defaultBackOff }: { logger: Logger; backOff?: BackOff },
): Supervised => {
  const status: ConsumerStatus = {
    name,
    state: 'running',
    lastError: null,
    lastErrorAt: null,
    recoveredAt: null,
    restarts: 0,
  };
  let current: Running | null = null;
  let stopped = false;
  let failures = 0;
  let timer: NodeJS.Timeout | null = null;

  const failed = (error: unknown, startedAt: number) => {
    if (stopped) return;
    if (Date.now() - startedAt >= backOff.resetAfterMs) failures = 0;
    failures += 1;
    const delayMs = backOffDelay(failures, backOff);
    status.state = 'retrying';
    status.lastError = error instanceof Error ? error.message : String(error);
    status.lastErrorAt = new Date().toISOString();
    status.recoveredAt = null;
    // One line per restart, with stable fields (docs/operations.md#logs); `restarts` counts this one.
    logger.warn(
      {
        consumer: name,
        restarts: status.restarts + 1,
        error: status.lastError,
        retryInMs: delayMs,
        err: error,
      },
      'consumer failed; restarting',
    );
    timer = setTimeout(() => {
      timer = null;
      status.restarts += 1;
      void run();
    }, delayMs);
  };

  const run = async (): Promise<void> => {
    if (stopped) return;
    const startedAt = Date.now();
    try {
      current = await start();
    } catch (error) {
      return failed(error, startedAt);
    }
    if (stopped) return void (await current.stop());
    status.state = 'running';
    if (status.lastError !== null) status.recoveredAt = new Date().toISOString();
    try {
      await current.done;
      if (!stopped) failed(new Error('stopped by itself'), startedAt);
    } catch (error) {
      failed(error, startedAt);
    }
  };

  void run();
  return {
    name,
    status: () => ({ ...status }),
    stop: async () => {
      stopped = true;
      if (timer) clearTimeout(timer);
      status.state = 'stopped';
      await current?.stop();
    },
  };
};
