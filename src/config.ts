import { join } from 'node:path';
import type { RemoteModelSetting } from './cv/models/remote-settings.js';
import type { ConsoleSettings } from './console/serve.js';
import type { CorsOrigins } from './http/cors.js';
import { writableShareOfLease } from './http/idempotency-store.js';
import type { RateLimitPolicy } from './http/rate-limit-policy.js';
import type { DecodeQueueSettings } from './media/decode-queue.js';
import type { DecodeLimits } from './media/header.js';
import {
  allSettings,
  ConfigError,
  givenText,
  minDistinctCharacters,
  minSecretLength,
  readOptionalSetting,
  readSetting,
  settings as S,
  type MetricsMode,
  type Role,
} from './settings.js';

export { ConfigError, metricsModes, roles, type MetricsMode, type Role } from './settings.js';

/**
 * Everything the service reads from its environment, read through the declarations in settings.ts (their
 * table is docs/operations.md#configuration). Only the rules between settings live here.
 */
export interface Config {
  port: number;
  host: string;
  dataDir: string;
  eventStoreUrl: string | null;
  mongodbUrl: string | null;
  /** PostgreSQL (DATABASE_URL): the stores of every kind, unless EVENTSTORE_URL or MONGODB_URL take theirs. */
  databaseUrl: string | null;
  /** Connections of this process to PostgreSQL at most (DATABASE_POOL_SIZE). */
  databasePoolSize: number;
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
  /** The service's public base URL, the issuer of its tokens: PUBLIC_URL, else the address it listens on. */
  publicUrl: string;
  tokenAudience: string;
  accessTokenTtlSeconds: number;
  refreshTokenTtlSeconds: number;
  signingKeysFile: string;
  /**
   * The names of the settings the environment gave, the others being defaults: without SIGNING_KEYS_FILE,
   * for one, a development keyring is created in DATA_DIR.
   */
  givenSettings: ReadonlySet<string>;
  webhooks: {
    timeoutMs: number;
    retryDelaysMs: number[];
    allowPrivateNetworks: boolean;
    allowHttp: boolean;
    /** Loopback receivers (over http too): WEBHOOK_ALLOW_LOOPBACK, else true outside production. */
    allowLoopback: boolean;
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
  /** null: off, digests only from `obs audit digest`. */
  auditDigestSchedule: string | null;
  /** Cross-cutting HTTP behaviour: see docs/api.md#cross-cutting-behaviour. */
  http: HttpSettings;
  /**
   * GET /metrics (METRICS): `platform` serves it on the API's port to the platform key, `port` serves it
   * without a credential on a separate listener (METRICS_PORT, on HOST), `off` serves it nowhere.
   */
  metrics: { mode: MetricsMode; port: number };
  /** OpenTelemetry: traces are exported over OTLP/HTTP only when OTEL_EXPORTER_OTLP_ENDPOINT is set. */
  otel: { endpoint: string | null; serviceName: string };
  /** The console's map: raster tiles under its vector basemap (CONSOLE_TILE_URL), none by default. */
  console: ConsoleSettings;
  cv: {
    /** The longest a job may run before it fails with `timeout` (CV_JOB_TIMEOUT). */
    jobTimeoutMs: number;
    /** Jobs one instance runs at once (CV_CONCURRENCY). */
    concurrency: number;
    /** Models behind inference servers (CV_REMOTE_MODELS, or the file CV_MODELS_FILE). */
    remoteModels: RemoteModelSetting[];
    /**
     * The built-in detector (objects-coco): its inference threads (CV_WORKERS), the folder of its weights
     * (CV_DETECTOR_WEIGHTS_DIR; the installed package's when null), and, for tests only, another thread
     * script (one that crashes).
     */
    detector: { threads: number; modelsDir: string | null; script?: URL };
  };
}

type Environment = Readonly<Record<string, string | undefined>>;

const weakSecret = (value: string): boolean =>
  value.length < minSecretLength || new Set(value).size < minDistinctCharacters;

/**
 * NODE_ENV=production takes no generated secret, since each instance would generate its own, and no weak
 * one (every secret but the key file's path).
 */
const checkProductionSecrets = (env: Environment): void => {
  const required = allSettings.filter((setting) => setting.requiredInProduction);
  const missing = required.filter((setting) => givenText(env, setting) === undefined).map((s) => s.name);
  if (missing.length > 0) {
    throw new ConfigError(
      `NODE_ENV=production needs every secret set explicitly; missing: ${missing.join(', ')}`,
    );
  }
  const weak = required
    .filter((setting) => setting.secret && weakSecret(givenText(env, setting) ?? ''))
    .map((s) => s.name);
  if (weak.length > 0) {
    throw new ConfigError(
      `NODE_ENV=production needs random secrets of at least ${minSecretLength} characters, at least ${minDistinctCharacters} of them different (e.g. openssl rand -hex 32); too weak: ${weak.join(', ')}`,
    );
  }
};

/** CV_REMOTE_MODELS or CV_MODELS_FILE: the remote CV models, none by default. */
const remoteModels = (env: Environment): RemoteModelSetting[] => {
  if (givenText(env, S.CV_REMOTE_MODELS) !== undefined && givenText(env, S.CV_MODELS_FILE) !== undefined) {
    throw new ConfigError('Set CV_REMOTE_MODELS or CV_MODELS_FILE, not both');
  }
  return readOptionalSetting(env, S.CV_REMOTE_MODELS) ?? readOptionalSetting(env, S.CV_MODELS_FILE) ?? [];
};

export interface HttpSettings {
  /** How long a response to a request with an Idempotency-Key is replayed (IDEMPOTENCY_TTL). */
  idempotencyTtlMs: number;
  /** How long a request with an Idempotency-Key holds its key while it runs (IDEMPOTENCY_LEASE). */
  idempotencyLeaseMs: number;
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

const httpSettings = (env: Environment): HttpSettings => {
  const headersTimeoutMs = readSetting(env, S.HTTP_HEADERS_TIMEOUT);
  const requestTimeoutMs = readSetting(env, S.HTTP_REQUEST_TIMEOUT);
  if (headersTimeoutMs > requestTimeoutMs) {
    throw new ConfigError('HTTP_HEADERS_TIMEOUT must not be longer than HTTP_REQUEST_TIMEOUT');
  }
  const idempotencyLeaseMs = readSetting(env, S.IDEMPOTENCY_LEASE);
  // A request may start writing only in the first three quarters of its hold on its key, and its body alone
  // may take HTTP_REQUEST_TIMEOUT to arrive.
  if (idempotencyLeaseMs * writableShareOfLease <= requestTimeoutMs) {
    throw new ConfigError(
      `IDEMPOTENCY_LEASE must be longer than 4/3 of HTTP_REQUEST_TIMEOUT (${Math.ceil(requestTimeoutMs / writableShareOfLease / 1000)} s): a request with an Idempotency-Key may start writing only in the first three quarters of its hold on the key, and its body may take HTTP_REQUEST_TIMEOUT to arrive`,
    );
  }
  return {
    idempotencyTtlMs: readSetting(env, S.IDEMPOTENCY_TTL),
    idempotencyLeaseMs,
    rateLimit: readSetting(env, S.RATE_LIMIT),
    corsOrigins: readOptionalSetting(env, S.CORS_ORIGINS),
    headersTimeoutMs,
    requestTimeoutMs,
    keepAliveTimeoutMs: readSetting(env, S.HTTP_KEEP_ALIVE_TIMEOUT),
    trustProxy: readSetting(env, S.TRUST_PROXY),
  };
};

/**
 * The image decoding budget and queue. Decodes hold threads of libuv's pool (UV_THREADPOOL_SIZE) that
 * password hashing needs: two stay free.
 */
const mediaDecode = (env: Environment): DecodeLimits & DecodeQueueSettings => {
  const pool = readSetting(env, S.UV_THREADPOOL_SIZE);
  const concurrency = readSetting(env, S.MEDIA_DECODE_CONCURRENCY);
  if (concurrency > Math.max(1, pool - 2)) {
    throw new ConfigError(
      `MEDIA_DECODE_CONCURRENCY=${concurrency} leaves fewer than 2 of the ${pool} threads of libuv's pool (UV_THREADPOOL_SIZE) to password hashing and file I/O`,
    );
  }
  return {
    maxPixels: readSetting(env, S.MEDIA_MAX_PIXELS),
    maxDecodedBytes: readSetting(env, S.MEDIA_MAX_DECODED_BYTES),
    concurrency,
    maxWaiting: readSetting(env, S.MEDIA_DECODE_QUEUE),
  };
};

/**
 * PUBLIC_URL when unset: the address the service listens on, so that the README's `http://127.0.0.1:3000`
 * is the tokens' issuer and OAuth discovery works there as it is. A wildcard address (`0.0.0.0`, `::`) is
 * no address a client can use: this machine's loopback stands for it.
 */
export const listenUrl = (host: string, port: number): string => {
  const wildcard = host === '0.0.0.0' || host === '::' || host === '[::]';
  const address = wildcard ? '127.0.0.1' : host.includes(':') && !host.startsWith('[') ? `[${host}]` : host;
  return `http://${address}:${port}`;
};

/** The console's optional tiles; their attribution means nothing without them. */
const consoleSettings = (env: Environment): ConsoleSettings => {
  const url = readOptionalSetting(env, S.CONSOLE_TILE_URL);
  const attribution = readOptionalSetting(env, S.CONSOLE_TILE_ATTRIBUTION);
  if (attribution !== null && url === null) {
    throw new ConfigError(
      'CONSOLE_TILE_ATTRIBUTION is set without CONSOLE_TILE_URL: it credits tiles that are not shown',
    );
  }
  return { tiles: url === null ? null : { url, attribution: attribution ?? '' } };
};

/** METRICS=port opens a second listener on HOST: it cannot share the API's port. */
const metricsSettings = (env: Environment, apiPort: number): Config['metrics'] => {
  const mode = readSetting(env, S.METRICS);
  const port = readSetting(env, S.METRICS_PORT);
  if (mode === 'port' && port === apiPort) {
    throw new ConfigError(`METRICS_PORT=${port} is the API's PORT: METRICS=port needs a port of its own`);
  }
  return { mode, port };
};

/**
 * The whole configuration, every setting checked: a ConfigError names the first setting that is not valid
 * and what it expects, before anything starts.
 */
export const loadConfig = (env: Environment = process.env): Config => {
  const production = readSetting(env, S.NODE_ENV) === 'production';
  if (production) checkProductionSecrets(env);
  const port = readSetting(env, S.PORT);
  const dataDir = readSetting(env, S.DATA_DIR);
  const signingKeysFile = readOptionalSetting(env, S.SIGNING_KEYS_FILE);
  return {
    port,
    host: readSetting(env, S.HOST),
    dataDir,
    eventStoreUrl: readOptionalSetting(env, S.EVENTSTORE_URL),
    mongodbUrl: readOptionalSetting(env, S.MONGODB_URL),
    databaseUrl: readOptionalSetting(env, S.DATABASE_URL),
    databasePoolSize: readSetting(env, S.DATABASE_POOL_SIZE),
    production,
    role: readSetting(env, S.ROLE),
    workerLeaseTtlMs: readSetting(env, S.WORKER_LEASE_TTL),
    logLevel: readSetting(env, S.LOG_LEVEL),
    bodyLimit: readSetting(env, S.BODY_LIMIT),
    mediaMaxBytes: readSetting(env, S.MEDIA_MAX_BYTES),
    mediaDecode: mediaDecode(env),
    consistencyTimeoutMs: readSetting(env, S.CONSISTENCY_TIMEOUT),
    cursorSecret: readOptionalSetting(env, S.CURSOR_SECRET),
    idempotencySecretKey: readOptionalSetting(env, S.IDEMPOTENCY_SECRET_KEY),
    platformAdminKey: readOptionalSetting(env, S.PLATFORM_ADMIN_KEY),
    publicUrl: readOptionalSetting(env, S.PUBLIC_URL) ?? listenUrl(readSetting(env, S.HOST), port),
    tokenAudience: readSetting(env, S.TOKEN_AUDIENCE),
    accessTokenTtlSeconds: Math.round(readSetting(env, S.ACCESS_TOKEN_TTL) / 1000),
    refreshTokenTtlSeconds: Math.round(readSetting(env, S.REFRESH_TOKEN_TTL) / 1000),
    signingKeysFile: signingKeysFile ?? join(dataDir, 'signing-keys.json'),
    givenSettings: new Set(
      allSettings.filter((setting) => givenText(env, setting) !== undefined).map((setting) => setting.name),
    ),
    webhooks: {
      timeoutMs: readSetting(env, S.WEBHOOK_TIMEOUT),
      retryDelaysMs: readSetting(env, S.WEBHOOK_RETRY_SCHEDULE),
      allowPrivateNetworks: readSetting(env, S.WEBHOOK_ALLOW_PRIVATE_NETWORKS),
      allowHttp: readSetting(env, S.WEBHOOK_ALLOW_HTTP),
      allowLoopback: readOptionalSetting(env, S.WEBHOOK_ALLOW_LOOPBACK) ?? !production,
      maxSubscriptions: readSetting(env, S.WEBHOOK_MAX_SUBSCRIPTIONS),
      secretKey: readOptionalSetting(env, S.WEBHOOK_SECRET_KEY),
      concurrency: readSetting(env, S.WEBHOOK_CONCURRENCY),
      perSubscription: readSetting(env, S.WEBHOOK_CONCURRENCY_PER_SUBSCRIPTION),
    },
    shutdownTimeoutMs: readSetting(env, S.SHUTDOWN_TIMEOUT),
    smtpUrl: readOptionalSetting(env, S.SMTP_URL),
    mailFrom: readSetting(env, S.MAIL_FROM),
    auditDigestSchedule: readSetting(env, S.AUDIT_DIGEST_SCHEDULE),
    http: httpSettings(env),
    metrics: metricsSettings(env, port),
    otel: {
      endpoint: readOptionalSetting(env, S.OTEL_EXPORTER_OTLP_ENDPOINT),
      serviceName: readSetting(env, S.OTEL_SERVICE_NAME),
    },
    console: consoleSettings(env),
    cv: {
      jobTimeoutMs: readSetting(env, S.CV_JOB_TIMEOUT),
      concurrency: readSetting(env, S.CV_CONCURRENCY),
      remoteModels: remoteModels(env),
      detector: {
        threads: readSetting(env, S.CV_WORKERS),
        modelsDir: readOptionalSetting(env, S.CV_DETECTOR_WEIGHTS_DIR),
      },
    },
  };
};
