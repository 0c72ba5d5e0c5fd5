import { parseByteSize } from '../core/durations.js';
import { parseCorsOrigins, type CorsOrigins } from '../http/cors.js';
import { parseRateLimit, type RateLimitPolicy } from '../http/rate-limit-policy.js';
import {
  declare,
  durationSetting,
  namedSettings,
  positiveDuration,
  positiveDurationSetting,
} from './declare.js';

/** HTTP: bodies, time-outs, rate limits, CORS and proxies. */
export const httpSettings = namedSettings({
  BODY_LIMIT: declare({
    default: '1mb',
    expected: 'a size such as 1mb or 512kb',
    description: 'largest JSON body; larger bodies get `413`',
    parse: parseByteSize,
  }),
  CONSISTENCY_TIMEOUT: durationSetting('5s', 'how long a list with `minPosition` waits for its projection'),
  IDEMPOTENCY_TTL: positiveDurationSetting(
    '24h',
    'how long the answer to a `POST` with an `Idempotency-Key` is replayed',
  ),
  IDEMPOTENCY_LEASE: positiveDurationSetting(
    '5m',
    'how long a `POST` with an `Idempotency-Key` holds its key while it runs; one still running after three quarters of it (a stalled process) writes nothing and answers `503`; longer than 4/3 of HTTP_REQUEST_TIMEOUT',
  ),
  RATE_LIMIT: declare({
    default: '600/1m',
    expected: 'requests per window such as 600/1m, or off',
    description:
      'requests per credential per window; counted per instance in memory, or for all instances together in PostgreSQL (DATABASE_URL without MONGODB_URL)',
    // null: `off`.
    parse: (s): RateLimitPolicy | null | undefined => parseRateLimit(s),
  }),
  CORS_ORIGINS: declare({
    default: null,
    defaultShown: 'none: no CORS headers',
    expected: 'a comma-separated list of origins such as https://app.example.com, or *',
    description: 'origins allowed cross-origin requests',
    parse: (s): CorsOrigins | undefined => parseCorsOrigins(s),
  }),
  HTTP_HEADERS_TIMEOUT: declare({
    default: '20s',
    expected: 'a duration above zero such as 20s, at most HTTP_REQUEST_TIMEOUT',
    description: "time for a request's headers to arrive; then `408` and the connection is closed",
    parse: positiveDuration,
  }),
  HTTP_REQUEST_TIMEOUT: positiveDurationSetting('60s', 'time for a whole request, body included, to arrive'),
  HTTP_KEEP_ALIVE_TIMEOUT: positiveDurationSetting('5s', 'idle keep-alive connections are closed after this'),
  TRUST_PROXY: declare({
    default: 'off',
    expected: 'the number of trusted proxy hops (1-9), or off',
    description: 'proxies in front whose `X-Forwarded-For` gives the client address (see Behind a TLS proxy)',
    parse: (s) => (s === 'off' || s === 'false' || s === '0' ? 0 : /^[1-9]$/.test(s) ? Number(s) : undefined),
  }),
});
