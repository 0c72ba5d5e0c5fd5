import { join } from 'node:path';
import { validate as cronValidate } from 'node-cron';
import { parseByteSize, parseDuration } from './core/durations.js';
import { parseCorsOrigins, type CorsOrigins } from './http/cors.js';
import { parseRateLimit, type RateLimitPolicy } from './http/rate-limit.js';
import { readFileSync } from 'node:fs';
import { builtinModelNames } from './cv/models/port.js';
import { parseRemoteModelSettings, type RemoteModelSetting } from './cv/models/remote.js';
import type { DecodeQueueSettings } from './media/decode-queue.js';
import { defaultDecodeLimits, type DecodeLimits } from './media/header.js';

/** Everything the service reads from its environment; README.md's configuration table mirrors this. */
export interface Config {
  port: number;
  host: string;
  dataDir: string;
  eventStoreUrl: string | null;
  mongodbUrl: string | null;
  production: boolean;
  /** What this process does (ROLE): `api` serves HTTP, `worker` runs the consumers, `all` both. */
  role: Role;
  /** How long the worker duties stay with a process that stopped renewing its lease (WORKER_LEASE_TTL). */
  workerLeaseTtlMs: number;
  logLevel: string;
  bodyLimit: number;
  /** The largest image body a media upload accepts (MEDIA_MAX_BYTES). */
  mediaMaxBytes: number;
  /** Image decoding: the budget and the decode queue (docs/api.md#media, docs/operations.md). */
  mediaDecode: DecodeLimits & DecodeQueueSettings;
  consistencyTimeoutMs: number;
  cursorSecret: string | null;
  /** Seals the kept Idempotency-Key answers; generated into DATA_DIR/secrets.json in development. */
  idempotencySecretKey: string | null;
  platformAdminKey: string | null;
  /** The service's public base URL: the issuer of its tokens. */
  publicUrl: string;
  tokenAudience: string;
  accessTokenTtlSeconds: number;
  refreshTokenTtlSeconds: number;
  signingKeysFile: string;
  /** True when SIGNING_KEYS_FILE was given; otherwise a development keyring is created in DATA_DIR. */
  signingKeysExplicit: boolean;
  webhooks: {
    timeoutMs: number;
    retryDelaysMs: number[];
    allowPrivateNetworks: boolean;
    allowHttp: boolean;
    maxSubscriptions: number;
    /** Seals subscription secrets in events; generated into DATA_DIR/secrets.json in development. */
    secretKey: string | null;
    concurrency: number;
    perSubscription: number;
  };
  /** On SIGTERM/SIGINT, how long requests and attempts in flight may take before they are cut (SHUTDOWN_TIMEOUT). */
  shutdownTimeoutMs: number;
  smtpUrl: string | null;
  mailFrom: string;
  /** node-cron expression for the per-tenant audit digests. */
  auditDigestSchedule: string;
  /** Cross-cutting HTTP behaviour: see docs/api.md#cross-cutting-behaviour. */
  http: HttpSettings;
  /**
   * GET /metrics (METRICS): `platform` serves it on the API's port to the platform key, `port` serves it
   * without a credential on a separate listener (METRICS_PORT, on HOST), `off` serves it nowhere.
   */
  metrics: { mode: MetricsMode; port: number };
  /** OpenTelemetry: traces are exported over OTLP/HTTP only when OTEL_EXPORTER_OTLP_ENDPOINT is set. */
  otel: { endpoint: string | null };
  cv: {
    /** The longest a job may run before it fails with `timeout` (CV_JOB_TIMEOUT). */
    jobTimeoutMs: number;
    /** Jobs one instance runs at once (CV_CONCURRENCY). */
    concurrency: number;
    /** Models behind inference servers (CV_REMOTE_MODELS, or the file CV_MODELS_FILE). */
    remoteModels: RemoteModelSetting[];
  };
}

/** Secrets that NODE_ENV=production insists on: a generated default would differ between instances. */
const productionSecrets = [
  'PLATFORM_ADMIN_KEY',
  'CURSOR_SECRET',
  'SIGNING_KEYS_FILE',
  'WEBHOOK_SECRET_KEY',
  'IDEMPOTENCY_SECRET_KEY',
] as const;

/**
 * What NODE_ENV=production takes as a secret (every one of productionSecrets but the key file's path): at
 * least 32 characters, at least 10 of them different, so that `x`, `short` or 40 times the same character
 * stop the service. `openssl rand -hex 32` passes.
 */
const minSecretLength = 32;
const minDistinctCharacters = 10;
const weakSecret = (value: string): boolean =>
  value.length < minSecretLength || new Set(value).size < minDistinctCharacters;

export class ConfigError extends Error {}

export const roles = ['all', 'api', 'worker'] as const;
export type Role = (typeof roles)[number];
export const metricsModes = ['platform', 'port', 'off'] as const;
export type MetricsMode = (typeof metricsModes)[number];

const read = <T>(
  env: NodeJS.ProcessEnv,
  name: string,
  fallback: string,
  parse: (s: string) => T | undefined,
  expected: string,
): T => {
  const raw = env[name] ?? fallback;
  const value = parse(raw);
  if (value === undefined) throw new ConfigError(`${name}=${raw} is not valid: expected ${expected}`);
  return value;
};

const optionalUrl = (env: NodeJS.ProcessEnv, name: string, schemes: readonly string[]): string | null => {
  const value = env[name]?.trim();
  if (!value) return null;
  if (!schemes.some((scheme) => value.startsWith(`${scheme}://`))) {
    throw new ConfigError(`${name} must start with ${schemes.map((s) => `${s}://`).join(' or ')}`);
  }
  return value;
};

/** CV_REMOTE_MODELS (JSON) or CV_MODELS_FILE (a JSON file): the remote CV models, none by default. */
const remoteModels = (env: NodeJS.ProcessEnv): RemoteModelSetting[] => {
  const inline = env.CV_REMOTE_MODELS?.trim();
  const file = env.CV_MODELS_FILE?.trim();
  if (inline && file) throw new ConfigError('Set CV_REMOTE_MODELS or CV_MODELS_FILE, not both');
  if (!inline && !file) return [];
  const name = inline ? 'CV_REMOTE_MODELS' : `CV_MODELS_FILE (${file})`;
  let json: unknown;
  try {
    json = JSON.parse(inline ?? readFileSync(file!, 'utf8'));
  } catch (error) {
    throw new ConfigError(`${name} is not valid: ${(error as Error).message}`);
  }
  try {
    return parseRemoteModelSettings(json, builtinModelNames);
  } catch (error) {
    throw new ConfigError(`${name} is not valid: ${(error as Error).message}`);
  }
};

export interface HttpSettings {
  /** How long a response to a request with an Idempotency-Key is replayed (IDEMPOTENCY_TTL). */
  idempotencyTtlMs: number;
  /** Requests per credential per window (RATE_LIMIT); null when `off`. */
  rateLimit: RateLimitPolicy | null;
  /** Origins allowed cross-origin requests (CORS_ORIGINS); null: no CORS headers at all. */
  corsOrigins: CorsOrigins;
  /** Time to receive a request's headers (HTTP_HEADERS_TIMEOUT); the connection is closed after it. */
  headersTimeoutMs: number;
  /** Time to receive a whole request, body included (HTTP_REQUEST_TIMEOUT). */
  requestTimeoutMs: number;
  /** How long an idle keep-alive connection stays open (HTTP_KEEP_ALIVE_TIMEOUT). */
  keepAliveTimeoutMs: number;
  /**
   * Proxies in front of the service whose X-Forwarded-For is trusted (TRUST_PROXY): 0, the default, reads
   * the client address from the socket; N reads the Nth address from the right of X-Forwarded-For.
   */
  trustProxy: number;
}

const httpSettings = (env: NodeJS.ProcessEnv): HttpSettings => {
  const positive = (name: string, fallback: string) =>
    read(env, name, fallback, (s) => parseDuration(s) || undefined, 'a duration above zero such as 30s');
  const headersTimeoutMs = positive('HTTP_HEADERS_TIMEOUT', '20s');
  const requestTimeoutMs = positive('HTTP_REQUEST_TIMEOUT', '60s');
  if (headersTimeoutMs > requestTimeoutMs) {
    throw new ConfigError('HTTP_HEADERS_TIMEOUT must not be longer than HTTP_REQUEST_TIMEOUT');
  }
  return {
    idempotencyTtlMs: positive('IDEMPOTENCY_TTL', '24h'),
    rateLimit: read(
      env,
      'RATE_LIMIT',
      '600/1m',
      parseRateLimit,
      'requests per window such as 600/1m, or off',
    ),
    corsOrigins: read(
      env,
      'CORS_ORIGINS',
      '',
      parseCorsOrigins,
      'a comma-separated list of origins such as https://app.example.com, or *',
    ),
    headersTimeoutMs,
    requestTimeoutMs,
    keepAliveTimeoutMs: positive('HTTP_KEEP_ALIVE_TIMEOUT', '5s'),
    trustProxy: read(
      env,
      'TRUST_PROXY',
      'off',
      (s) => (s === 'off' || s === 'false' || s === '0' ? 0 : /^[1-9]$/.test(s) ? Number(s) : undefined),
      'the number of trusted proxy hops (1-9), or off',
    ),
  };
};

/**
 * MEDIA_MAX_PIXELS, MEDIA_MAX_DECODED_BYTES, MEDIA_DECODE_CONCURRENCY and MEDIA_DECODE_QUEUE. Decodes hold
 * threads of libuv's pool (UV_THREADPOOL_SIZE, 4 by default) that password hashing needs: two stay free.
 */
const mediaDecode = (
  env: NodeJS.ProcessEnv,
  count: (name: string, fallback: string) => number,
): DecodeLimits & DecodeQueueSettings => {
  const pool = Number(env.UV_THREADPOOL_SIZE) || 4;
  const concurrency = count('MEDIA_DECODE_CONCURRENCY', '1');
  if (concurrency > Math.max(1, pool - 2)) {
    throw new ConfigError(
      `MEDIA_DECODE_CONCURRENCY=${concurrency} leaves fewer than 2 of the ${pool} threads of libuv's pool (UV_THREADPOOL_SIZE) to password hashing and file I/O`,
    );
  }
  return {
    maxPixels: read(
      env,
      'MEDIA_MAX_PIXELS',
      String(defaultDecodeLimits.maxPixels),
      (s) => (/^[1-9]\d{0,11}$/.test(s) ? Number(s) : undefined),
      'a positive whole number of pixels such as 40000000',
    ),
    maxDecodedBytes: read(
      env,
      'MEDIA_MAX_DECODED_BYTES',
      String(defaultDecodeLimits.maxDecodedBytes),
      (s) => parseByteSize(s) || undefined,
      'a size above zero such as 160000000 or 150mb',
    ),
    concurrency,
    maxWaiting: count('MEDIA_DECODE_QUEUE', '8'),
  };
};

export const loadConfig = (env: NodeJS.ProcessEnv = process.env): Config => {
  const production = env.NODE_ENV === 'production';
  const given = (name: string) => env[name]?.trim() || null;
  const missing = productionSecrets.filter((name) => !given(name));
  if (production && missing.length > 0) {
    throw new ConfigError(
      `NODE_ENV=production needs every secret set explicitly; missing: ${missing.join(', ')}`,
    );
  }
  const weak = productionSecrets.filter(
    (name) => name !== 'SIGNING_KEYS_FILE' && weakSecret(given(name) ?? ''),
  );
  if (production && weak.length > 0) {
    throw new ConfigError(
      `NODE_ENV=production needs random secrets of at least ${minSecretLength} characters, at least ${minDistinctCharacters} of them different (e.g. openssl rand -hex 32); too weak: ${weak.join(', ')}`,
    );
  }
  const port = read(
    env,
    'PORT',
    '3000',
    (s) => (/^\d+$/.test(s) && Number(s) < 65536 ? Number(s) : undefined),
    'a TCP port',
  );
  const dataDir = given('DATA_DIR') ?? './data';
  const flag = (name: string) =>
    read(env, name, 'false', (s) => ({ true: true, false: false })[s], 'true or false');
  const count = (name: string, fallback: string) =>
    read(
      env,
      name,
      fallback,
      (s) => (/^[1-9]\d{0,5}$/.test(s) ? Number(s) : undefined),
      'a positive whole number',
    );
  const seconds = (name: string, fallback: string) =>
    Math.round(read(env, name, fallback, parseDuration, 'a duration such as 15m') / 1000);
  return {
    port,
    host: given('HOST') ?? '127.0.0.1',
    dataDir,
    eventStoreUrl: optionalUrl(env, 'EVENTSTORE_URL', ['esdb', 'esdb+discover', 'kurrentdb', 'kdb']),
    mongodbUrl: optionalUrl(env, 'MONGODB_URL', ['mongodb', 'mongodb+srv']),
    production,
    role: read(env, 'ROLE', 'all', (s) => roles.find((role) => role === s), `one of ${roles.join(', ')}`),
    workerLeaseTtlMs: read(
      env,
      'WORKER_LEASE_TTL',
      '15s',
      (s) => ((parseDuration(s) ?? 0) >= 1000 ? parseDuration(s) : undefined),
      'a duration of at least 1s such as 15s',
    ),
    logLevel: given('LOG_LEVEL') ?? 'info',
    bodyLimit: read(env, 'BODY_LIMIT', '1mb', parseByteSize, 'a size such as 1mb or 512kb'),
    mediaMaxBytes: read(env, 'MEDIA_MAX_BYTES', '10mb', parseByteSize, 'a size such as 10mb or 512kb'),
    mediaDecode: mediaDecode(env, count),
    consistencyTimeoutMs: read(env, 'CONSISTENCY_TIMEOUT', '5s', parseDuration, 'a duration such as 5s'),
    cursorSecret: given('CURSOR_SECRET'),
    idempotencySecretKey: given('IDEMPOTENCY_SECRET_KEY'),
    platformAdminKey: given('PLATFORM_ADMIN_KEY'),
    publicUrl: (given('PUBLIC_URL') ?? `http://localhost:${port}`).replace(/\/+$/, ''),
    tokenAudience: given('TOKEN_AUDIENCE') ?? 'observation-service',
    accessTokenTtlSeconds: seconds('ACCESS_TOKEN_TTL', '15m'),
    refreshTokenTtlSeconds: seconds('REFRESH_TOKEN_TTL', '30d'),
    signingKeysFile: given('SIGNING_KEYS_FILE') ?? join(dataDir, 'signing-keys.json'),
    signingKeysExplicit: given('SIGNING_KEYS_FILE') !== null,
    webhooks: {
      timeoutMs: read(env, 'WEBHOOK_TIMEOUT', '30s', parseDuration, 'a duration such as 30s'),
      retryDelaysMs: read(
        env,
        'WEBHOOK_RETRY_SCHEDULE',
        '1m,5m,30m,2h,24h',
        (s) => {
          const delays = s.split(',').map(parseDuration);
          return delays.every((d) => d !== undefined) ? delays : undefined;
        },
        'comma-separated durations such as 1m,5m,30m,2h,24h',
      ),
      allowPrivateNetworks: flag('WEBHOOK_ALLOW_PRIVATE_NETWORKS'),
      allowHttp: flag('WEBHOOK_ALLOW_HTTP'),
      maxSubscriptions: count('WEBHOOK_MAX_SUBSCRIPTIONS', '50'),
      secretKey: given('WEBHOOK_SECRET_KEY'),
      concurrency: count('WEBHOOK_CONCURRENCY', '32'),
      perSubscription: count('WEBHOOK_CONCURRENCY_PER_SUBSCRIPTION', '4'),
    },
    shutdownTimeoutMs: read(env, 'SHUTDOWN_TIMEOUT', '10s', parseDuration, 'a duration such as 10s'),
    smtpUrl: optionalUrl(env, 'SMTP_URL', ['smtp', 'smtps']),
    mailFrom: given('MAIL_FROM') ?? 'Observation service <no-reply@localhost>',
    auditDigestSchedule: read(
      env,
      'AUDIT_DIGEST_SCHEDULE',
      '0 * * * *',
      (s) => (cronValidate(s) ? s : undefined),
      'a cron expression such as "0 * * * *"',
    ),
    http: httpSettings(env),
    metrics: {
      mode: read(
        env,
        'METRICS',
        'platform',
        (s) => metricsModes.find((mode) => mode === s),
        `one of ${metricsModes.join(', ')}`,
      ),
      port: read(
        env,
        'METRICS_PORT',
        '9464',
        (s) => (/^\d+$/.test(s) && Number(s) > 0 && Number(s) < 65536 ? Number(s) : undefined),
        'a TCP port',
      ),
    },
    otel: { endpoint: optionalUrl(env, 'OTEL_EXPORTER_OTLP_ENDPOINT', ['http', 'https']) },
    cv: {
      jobTimeoutMs: read(
        env,
        'CV_JOB_TIMEOUT',
        '60s',
        (s) => parseDuration(s) || undefined,
        'a duration above zero such as 60s',
      ),
      concurrency: count('CV_CONCURRENCY', '4'),
      remoteModels: remoteModels(env),
    },
  };
};
