import { parseDuration } from '../core/durations.js';
import { countSetting, declare, durationSetting, flag, flagSetting, namedSettings } from './declare.js';

/** Webhooks: time-outs, retries, the receivers allowed, and the concurrency of deliveries. */
export const webhookSettings = namedSettings({
  WEBHOOK_TIMEOUT: durationSetting(
    '30s',
    'a delivery fails without a `2xx` answer within this; a claimed attempt is taken over 10 s later',
  ),
  WEBHOOK_RETRY_SCHEDULE: declare({
    default: '1m,5m,30m,2h,24h',
    expected: 'comma-separated durations such as 1m,5m,30m,2h,24h',
    description:
      'the delays of the retries after a failed delivery; after the last one the subscription is disabled',
    parse: (s) => {
      const delays = s.split(',').map(parseDuration);
      return delays.every((d) => d !== undefined) ? delays : undefined;
    },
  }),
  WEBHOOK_ALLOW_PRIVATE_NETWORKS: flagSetting(
    'false',
    'allow subscription URLs on loopback, private and other non-public addresses (development)',
  ),
  WEBHOOK_ALLOW_LOOPBACK: declare({
    default: null,
    defaultShown: '`true`, but `false` with NODE_ENV=production',
    expected: 'true or false',
    description:
      'allow subscription URLs on loopback (127.0.0.0/8, ::1, `localhost`), over `http` too: a receiver on the same machine, for development',
    parse: flag,
  }),
  WEBHOOK_ALLOW_HTTP: flagSetting('false', 'allow `http` subscription URLs besides `https` (development)'),
  WEBHOOK_MAX_SUBSCRIPTIONS: countSetting('50', 'subscriptions per tenant; one more gets `409`'),
  WEBHOOK_CONCURRENCY: countSetting('32', 'delivery attempts in flight at once, per instance'),
  WEBHOOK_CONCURRENCY_PER_SUBSCRIPTION: countSetting(
    '4',
    'delivery attempts in flight at once to one subscription',
  ),
});
