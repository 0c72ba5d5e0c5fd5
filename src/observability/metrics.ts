import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import type { ConsumerState, ConsumerStatus } from '../core/supervisor.js';
import type { EventStore } from '../eventstore/port.js';
import { consumerSnapshot, type ConsumerProbe, type ConsumerReading } from './metrics-consumers.js';

/**
 * The service's Prometheus metrics, in a registry of its own: tests start many services in one process,
 * and each must count only its own work (the process defaults, which are the process's, are shared). Every label has a bounded set of values (route templates, status
 * classes, consumer and model names, outcomes): tenant ids are never labels, there is no bound on them.
 * docs/operations.md#metrics lists every metric.
 */

/** Where the scrape-time values come from; given once the service is wired (see `observe`). */
export interface MetricsSources {
  /** The supervisor state of every consumer this process runs (Service.consumers). */
  consumers: () => ConsumerStatus[];
  /** Where each consumer is, by name: what the lag is computed from. */
  probes: () => ConsumerProbe[];
  eventStore: Pick<EventStore, 'headPosition' | 'readAll'>;
  /** Messages waiting in DATA_DIR/outbox (no SMTP_URL); null with SMTP, which keeps no outbox. */
  outboxDepth: () => Promise<number | null>;
  /** CV jobs not finished yet, across tenants. */
  cvJobs: () => Promise<{ queued: number; running: number }>;
}

const states: readonly ConsumerState[] = ['running', 'retrying', 'standby', 'stopped'];

/** Seconds; the HTTP routes answer in milliseconds, a slow upload or a consistency wait in seconds. */
const httpBuckets = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];
/** From a domain fact to its webhook's 2xx: immediate deliveries, then the retries' delays (minutes, hours). */
const deliveryBuckets = [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 1800, 3600, 21600, 86400];
const cvBuckets = [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120];
const appendBuckets = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1];

let processDefaults: Registry | null = null;

/**
 * prom-client's process defaults (CPU, memory, heap, event-loop lag, GC) belong to the process, whatever
 * number of services it runs: collected once, into a registry every service's exposition includes. Each
 * collection starts an event-loop monitor and a GC observer that nothing stops, so one per service would
 * pile up in a test run that starts hundreds.
 */
const processRegistry = (): Registry => {
  if (!processDefaults) {
    processDefaults = new Registry();
    collectDefaultMetrics({ register: processDefaults });
  }
  return processDefaults;
};

/** `2xx` for 204, `5xx` for 503: the status as a bounded label. */
export const statusClass = (status: number): string => `${Math.floor(status / 100)}xx`;

export const createMetrics = () => {
  const registry = new Registry();
  const registers = [registry];
  let sources: MetricsSources | null = null;
  const snapshot = consumerSnapshot(() => sources);

  /** A gauge by consumer, set at scrape time from one shared reading of every consumer. */
  const consumerGauge = (name: string, help: string, value: (reading: ConsumerReading) => number | null) =>
    new Gauge({
      name,
      help,
      labelNames: ['consumer'],
      registers,
      async collect() {
        this.reset();
        for (const reading of await snapshot()) {
          const measured = value(reading);
          if (measured !== null) this.set({ consumer: reading.name }, measured);
        }
      },
    });

  const instruments = {
    httpDuration: new Histogram({
      name: 'obs_http_request_duration_seconds',
      help: 'HTTP requests by route template (or "unmatched"), method and status class',
      labelNames: ['route', 'method', 'status_class'],
      buckets: httpBuckets,
      registers,
    }),
    consumerPosition: consumerGauge(
      'obs_consumer_position',
      'The last position of the event store a consumer has handled (its checkpoint)',
      (reading) => reading.position,
    ),
    consumerLagEvents: consumerGauge(
      'obs_consumer_lag_events',
      'Head position of the event store minus the checkpoint, when an event of the consumer waits; else 0',
      (reading) => reading.lagEvents,
    ),
    consumerLagSeconds: consumerGauge(
      'obs_consumer_lag_seconds',
      'Age of the oldest event the consumer has not handled yet; 0 when caught up',
      (reading) => reading.lagSeconds,
    ),
    consumerParked: consumerGauge(
      'obs_consumer_parked_events',
      'Events the consumer set aside (parked) and that wait for an operator',
      (reading) => reading.parked,
    ),
    consumerRetries: new Counter({
      name: 'obs_consumer_retries_total',
      help: 'Events a consumer group handed back to be delivered again (nack with retry)',
      labelNames: ['consumer'],
      registers,
      collect() {
        // Every consumer has the series, at 0 until its first retry: a rate over it needs the start.
        for (const consumer of sources?.consumers() ?? []) this.inc({ consumer: consumer.name }, 0);
      },
    }),
    claimRenewalFailures: new Counter({
      name: 'obs_consumer_claim_renewal_failures_total',
      help: 'Renewals of a consumer group consumer’s claims that failed (PostgreSQL): its events may go to another consumer',
      labelNames: ['consumer'],
      registers,
    }),
    consumerState: new Gauge({
      name: 'obs_consumer_state',
      help: 'The supervisor state of each consumer: 1 for its current state, 0 for the others',
      labelNames: ['consumer', 'state'],
      registers,
      collect() {
        this.reset();
        for (const consumer of sources?.consumers() ?? []) {
          for (const state of states) {
            this.set({ consumer: consumer.name, state }, consumer.state === state ? 1 : 0);
          }
        }
      },
    }),
    consumerRestarts: new Counter({
      name: 'obs_consumer_restarts_total',
      help: 'Times the supervisor started a consumer again after a failure',
      labelNames: ['consumer'],
      registers,
      collect() {
        // The supervisor keeps the count; a consumer started anew (a lease taken over) counts from 0.
        this.reset();
        for (const consumer of sources?.consumers() ?? []) {
          this.inc({ consumer: consumer.name }, consumer.restarts);
        }
      },
    }),
    webhookAttempts: new Counter({
      name: 'obs_webhook_attempts_total',
      help: 'Webhook delivery attempts by outcome: succeeded, retrying, exhausted or failed (manual)',
      labelNames: ['outcome'],
      registers,
    }),
    webhookLatency: new Histogram({
      name: 'obs_webhook_delivery_latency_seconds',
      help: 'From the domain fact (its occurredAt) to the 2xx of its webhook delivery',
      buckets: deliveryBuckets,
      registers,
    }),
    webhookDisabled: new Counter({
      name: 'obs_webhook_subscriptions_disabled_total',
      help: 'Webhook subscriptions disabled by the service: retries exhausted, or the owner lost the scope',
      labelNames: ['reason'],
      registers,
    }),
    mailOutbox: new Gauge({
      name: 'obs_mail_outbox_messages',
      help: 'E-mails written to DATA_DIR/outbox (no SMTP_URL) and still there',
      registers,
      async collect() {
        this.reset();
        const depth = await sources?.outboxDepth();
        if (depth !== null && depth !== undefined) this.set(depth);
      },
    }),
    cvDuration: new Histogram({
      name: 'obs_cv_job_duration_seconds',
      help: 'One run of a CV job, by model',
      labelNames: ['model'],
      buckets: cvBuckets,
      registers,
    }),
    cvOutcomes: new Counter({
      name: 'obs_cv_jobs_total',
      help: 'CV job runs by model and outcome: completed, or the error code of the failure',
      labelNames: ['model', 'outcome'],
      registers,
    }),
    cvQueue: new Gauge({
      name: 'obs_cv_jobs_pending',
      help: 'CV jobs not finished, across tenants: queued (waiting for a worker) or running',
      labelNames: ['status'],
      registers,
      async collect() {
        this.reset();
        if (!sources) return;
        const { queued, running } = await sources.cvJobs();
        this.set({ status: 'queued' }, queued);
        this.set({ status: 'running' }, running);
      },
    }),
    appends: new Counter({
      name: 'obs_eventstore_appends_total',
      help: 'Appends to the event store by result: ok, conflict (wrong expected version) or error',
      labelNames: ['result'],
      registers,
    }),
    appendedEvents: new Counter({
      name: 'obs_eventstore_appended_events_total',
      help: 'Events written by successful appends',
      registers,
    }),
    appendDuration: new Histogram({
      name: 'obs_eventstore_append_duration_seconds',
      help: 'Latency of one append to the event store, whatever its result',
      buckets: appendBuckets,
      registers,
    }),
  };

  return {
    registry,
    ...instruments,
    /** Connects the scrape-time values; before this, the consumer and queue metrics are empty. */
    observe: (given: MetricsSources) => {
      sources = given;
    },
    /** This service's metrics and the process defaults: what GET /metrics shows. */
    exposition: () => Registry.merge([processRegistry(), registry]),
    /** The exposition in the Prometheus text format, and its content type. */
    scrape: async () => {
      const exposed = Registry.merge([processRegistry(), registry]);
      return { contentType: exposed.contentType, body: await exposed.metrics() };
    },
  };
};

export type Metrics = ReturnType<typeof createMetrics>;
