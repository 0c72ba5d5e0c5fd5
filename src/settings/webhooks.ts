import { parseDuration } from '../core/durations.js';
import { declare, positiveCount, duration, flag } from './declare.js';

/** Webhooks: time-outs, retries, the receivers allowed, and the concurrency of deliveries. */
export const webhookSettings = {
  WEBHOOK_TIMEOUT: declare('WEBHOOK_TIMEOUT')({
    default: '30s',
    expected: 'a duration such as 30s',
    description:
      'a delivery fails without a `2xx` answer within this; a claimed attempt is taken over 10 s later',
    parse: duration,
  }),
  WEBHOOK_RETRY_SCHEDULE: declare('WEBHOOK_RETRY_SCHEDULE')({
    default: '1m,5m,30m,2h,24h',
    expected: 'comma-separated durations such as 1m,5m,30m,2h,24h',
    description:
      'the delays of the retries after a failed delivery; after the last one the subscription is disabled',
    parse: (s) => {
      const delays = s.split(',').map(parseDuration);
      return delays.every((d) => d !== undefined) ? delays : undefined;
    },
  }),
  WEBHOOK_ALLOW_PRIVATE_NETWORKS: declare('WEBHOOK_ALLOW_PRIVATE_NETWORKS')({
    default: 'false',
    expected: 'true or false',
    description: 'allow subscription URLs on loopback, private and other non-public addresses (development)',
    parse: flag,
  }),
  WEBHOOK_ALLOW_LOOPBACK: declare('WEBHOOK_ALLOW_LOOPBACK')({
    default: null,
    defaultShown: '`true`, but `false` with NODE_ENV=production',
    expected: 'true or false',
    description:
      'allow subscription URLs on loopback (127.0.0.0/8, ::1, `localhost`), over `http` too: a receiver on the same machine, for development',
    parse: flag,
  }),
  WEBHOOK_ALLOW_HTTP: declare('WEBHOOK_ALLOW_HTTP')({
    default: 'false',
    expected: 'true or false',
    description: 'allow `http` subscription URLs besides `https` (development)',
    parse: flag,
  }),
  WEBHOOK_MAX_SUBSCRIPTIONS: declare('WEBHOOK_MAX_SUBSCRIPTIONS')({
    default: '50',
    expected: 'a positive whole number',
    description: 'subscriptions per tenant; one more gets `409`',
    parse: positiveCount,
  }),
  WEBHOOK_CONCURRENCY: declare('WEBHOOK_CONCURRENCY')({
    default: '32',
    expected: 'a positive whole number',
    description: 'delivery attempts in flight at once, per instance',
    parse: positiveCount,
  }),
  WEBHOOK_CONCURRENCY_PER_SUBSCRIPTION: declare('WEBHOOK_CONCURRENCY_PER_SUBSCRIPTION')({
    default: '4',
    expected: 'a positive whole number',
    description: 'delivery attempts in flight at once to one subscription',
    parse: positiveCount,
  }),
} as const;
