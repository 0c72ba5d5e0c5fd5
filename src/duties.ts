import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import type { Logger } from 'pino';
import { notRunning, type ConsumerStatus } from './core/supervisor.js';
import type { EventStore } from './eventstore/port.js';

/** A background duty of the worker role: a projection, the webhook worker, the CV worker, the digests. */
export interface Duty {
  start(): Promise<void> | void;
  stop(): Promise<void>;
  consumers(): ConsumerStatus[];
}

export interface WorkerDuties {
  /** Takes the lease (or stands by) and starts the duties it may run; resolves once that is decided. */
  start(): Promise<void>;
  /** Stops the duties and gives the lease up, so a standby process takes over at once. */
  stop(): Promise<void>;
  consumers(): ConsumerStatus[];
}

export const workerLease = 'worker';

/** How long after the holder's lease runs out a standby asks for it: the expiry itself, and clock grain. */
const takeOverMarginMs = 50;

/**
 * When to ask for the lease next. The owner renews every third of the TTL, but after a failed renewal no
 * later than its lease's end, so that it stops its duties on time rather than up to a third late. A standby
 * asks every third of the TTL too, but no later than just after the holder's lease runs out: a take-over
 * after kill -9 then comes within the TTL of the owner's last renewal (so of the kill), not up to a third
 * of it later (17.5 s where the docs said 15 s).
 */
export const nextAttemptInMs = (
  ttlMs: number,
  now: number,
  { until, owned }: { until: number; owned: boolean },
): number => {
  const renewal = ttlMs / 3;
  const deadline = owned ? until - now : until - now + takeOverMarginMs;
  // A lease end already past (a store that fails) is no reason to ask again at once.
  return deadline > 0 ? Math.min(renewal, deadline) : renewal;
};

/**
 * The worker duties of one process. The embedded store cannot share a consumer group or a projection
 * between processes, so the processes on one DATA_DIR elect one owner through a lease in the event store:
 * the owner runs the duties and renews the lease; the others log that they stand by, and one of them takes
 * over within a lease period when the owner goes away (kill -9 included). An owner that cannot renew
 * stops its duties once its lease has run out, so two owners never run at once. On EventStoreDB every
 * lease is granted: its consumer groups share events between any number of workers.
 */
export const workerDuties = ({
  eventStore,
  logger,
  duties,
  leaseTtlMs = 15_000,
}: {
  eventStore: EventStore;
  logger: Logger;
  duties: readonly Duty[];
  leaseTtlMs?: number;
}): WorkerDuties => {
  const owner = `${hostname()} pid ${process.pid} (${randomUUID().slice(0, 8)})`;
  let running = false;
  let stopped = false;
  let heldUntil = 0;
  /** The other holder's lease end, as last seen while standing by. */
  let theirsUntil = 0;
  let holder: string | null = null;
  let timer: NodeJS.Timeout | null = null;
  let turn: Promise<void> = Promise.resolve();

  const startDuties = async () => {
    running = true;
    logger.info({ owner }, 'running the worker duties');
    for (const duty of duties) await duty.start();
  };
  const stopDuties = async () => {
    running = false;
    for (const duty of [...duties].reverse()) await duty.stop();
  };

  const renew = async () => {
    try {
      const lease = await eventStore.acquireLease(workerLease, owner, leaseTtlMs);
      if (stopped) return;
      if (lease.acquired) {
        heldUntil = lease.expiresAt.getTime();
        holder = null;
        if (!running) await startDuties();
        return;
      }
      if (holder !== lease.holder) {
        logger.warn(
          { holder: lease.holder, until: lease.expiresAt.toISOString() },
          'another process runs the worker duties on this store; standing by to take over',
        );
      }
      holder = lease.holder;
      theirsUntil = lease.expiresAt.getTime();
      if (running) await stopDuties();
    } catch (error) {
      logger.error({ err: error }, 'the worker lease could not be renewed');
      if (running && Date.now() >= heldUntil) {
        logger.error('the worker lease ran out; stopping the worker duties until it is taken again');
        await stopDuties();
      }
    }
  };

  const loop = () => {
    const owned = holder === null;
    const wait = nextAttemptInMs(leaseTtlMs, Date.now(), { until: owned ? heldUntil : theirsUntil, owned });
    timer = setTimeout(() => {
      turn = turn.then(renew).finally(() => {
        if (!stopped) loop();
      });
    }, wait);
    timer.unref();
  };

  return {
    start: async () => {
      turn = renew();
      await turn;
      loop();
    },
    stop: async () => {
      stopped = true;
      if (timer) clearTimeout(timer);
      await turn;
      if (running) await stopDuties();
      await eventStore.releaseLease(workerLease, owner).catch(() => undefined);
    },
    consumers: () =>
      running || holder === null
        ? duties.flatMap((duty) => duty.consumers())
        : [notRunning('worker', 'standby', `the worker duties are held by ${holder}`)],
  };
};
