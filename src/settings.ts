import { readFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { validate as cronValidate } from 'node-cron';
import { parseByteSize, parseDuration } from './core/durations.js';
import { builtinModelNames } from './cv/models/port.js';
import { parseRemoteModelSettings, type RemoteModelSetting } from './cv/models/remote.js';
import { parseCorsOrigins, type CorsOrigins } from './http/cors.js';
import { parseRateLimit, type RateLimitPolicy } from './http/rate-limit.js';
import { metricsModes, type MetricsMode } from './observability/metrics-http.js';
import { defaultDecodeLimits } from './media/header.js';

/**
 * Every environment variable the service reads, declared once: config.ts reads them through these
 * declarations, the start-up log and warnings list them, and `npm run docs:settings` writes the table in
 * docs/operations.md#configuration from them. A setting read anywhere else fails test/unit/settings.test.ts.
 */
export interface Setting<T = unknown, D extends string | null = string | null> {
  readonly name: string;
  /** What a valid value looks like: shown in the table, and in the error when a value is not one. */
  readonly expected: string;
  /** The text read when the variable is unset or blank; null when there is none (the value is then null). */
  readonly default: D;
  /** The default as the table shows it, when it is not `default` itself (generated, derived, none). */
  readonly defaultShown?: string;
  readonly description: string;
  /** NODE_ENV=production refuses to start without it: a generated default would differ between instances. */
  readonly requiredInProduction: boolean;
  /** Never logged nor echoed in an error, only `[redacted]`. */
  readonly secret: boolean;
  /** How an error echoes the value: `NAME=value`, `NAME (path)`, or not at all (long JSON, secrets). */
  readonly echo: 'value' | 'path' | 'never';
  /** The value, or undefined when the text is not one; may throw an Error saying what is wrong. */
  readonly parse: (text: string) => T | undefined;
}

export class ConfigError extends Error {}

type Declaration<T, D extends string | null> = Pick<Setting<T, D>, 'expected' | 'description' | 'parse'> &
  Partial<Pick<Setting<T, D>, 'defaultShown' | 'requiredInProduction' | 'secret' | 'echo'>> & { default: D };

const declare =
  (name: string) =>
  <T, const D extends string | null>(declaration: Declaration<T, D>): Setting<T, D> => ({
    name,
    requiredInProduction: false,
    secret: false,
    echo: declaration.secret ? 'never' : 'value',
    ...declaration,
  });

// The forms values take, shared by the declarations below.
const wholeNumber = (pattern: RegExp) => (s: string) => (pattern.test(s) ? Number(s) : undefined);
const positiveCount = wholeNumber(/^[1-9]\d{0,5}$/);
const tcpPort = (s: string) => (/^\d+$/.test(s) && Number(s) < 65536 ? Number(s) : undefined);
const duration = (s: string) => parseDuration(s);
const positiveDuration = (s: string) => parseDuration(s) || undefined;
const flag = (s: string) => ({ true: true, false: false })[s];
const oneOf =
  <const V extends string>(values: readonly V[]) =>
  (s: string) =>
    values.find((value) => value === s);
const text = (s: string) => s;
const url = (schemes: readonly string[]) => (s: string) =>
  schemes.some((scheme) => s.startsWith(`${scheme}://`)) ? s : undefined;
const urlForm = (schemes: readonly string[], example: string) =>
  `a URL starting with ${schemes.map((scheme) => `${scheme}://`).join(' or ')}, such as ${example}`;
const remoteModels = (json: string): RemoteModelSetting[] =>
  parseRemoteModelSettings(JSON.parse(json), builtinModelNames);

export const roles = ['all', 'api', 'worker'] as const;
export type Role = (typeof roles)[number];
export { metricsModes, type MetricsMode };
export const logLevels = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;

/**
 * What NODE_ENV=production takes as a secret (every secret but the key file's path): at least 32
 * characters, at least 10 of them different, so that `x`, `short` or 40 times the same character stop the
 * service. `openssl rand -hex 32` passes.
 */
export const minSecretLength = 32;
export const minDistinctCharacters = 10;
const secretForm = `in production a random text of at least ${minSecretLength} characters, ${minDistinctCharacters} of them different (\`openssl rand -hex 32\`)`;
const generated = 'generated in development (`DATA_DIR/secrets.json`)';
const eventStoreSchemes = ['esdb', 'esdb+discover', 'kurrentdb', 'kdb'] as const;

/** In the order of the table in docs/operations.md: process, stores, secrets, then feature by feature. */
export const settings = {
  NODE_ENV: declare('NODE_ENV')({
    default: 'development',
    expected: '`production`, or anything else for development',
    description:
      '`production` refuses to start without every secret marked required here, or with a weak one, and generates none',
    parse: text,
  }),
  ROLE: declare('ROLE')({
    default: 'all',
    expected: `one of ${roles.join(', ')}`,
    description:
      '`all`: HTTP and the worker duties; `api`: HTTP only; `worker`: projections, webhooks, CV jobs and digests',
    parse: oneOf(roles),
  }),
  PORT: declare('PORT')({
    default: '3000',
    expected: 'a TCP port',
    description: 'HTTP port',
    parse: tcpPort,
  }),
  HOST: declare('HOST')({
    default: '127.0.0.1',
    expected: 'an address or host name such as 0.0.0.0',
    description: 'address to listen on (`0.0.0.0` in a container)',
    parse: (s) => (/^[^\s/]+$/.test(s) ? s : undefined),
  }),
  PUBLIC_URL: declare('PUBLIC_URL')({
    default: null,
    defaultShown: '`http://localhost:PORT`',
    expected: urlForm(['http', 'https'], 'https://obs.example.com'),
    description: 'the address clients use: the `iss` of the tokens and the base of the OAuth metadata',
    parse: (s) => (url(['http', 'https'])(s) && URL.canParse(s) ? s.replace(/\/+$/, '') : undefined),
  }),
  LOG_LEVEL: declare('LOG_LEVEL')({
    default: 'info',
    expected: `one of ${logLevels.join(', ')}`,
    description: 'the lowest pino level logged',
    parse: oneOf(logLevels),
  }),
  SHUTDOWN_TIMEOUT: declare('SHUTDOWN_TIMEOUT')({
    default: '10s',
    expected: 'a duration such as 10s',
    description: 'drain deadline on SIGTERM/SIGINT for requests, webhook attempts and CV runs in flight',
    parse: duration,
  }),
  WORKER_LEASE_TTL: declare('WORKER_LEASE_TTL')({
    default: '15s',
    expected: 'a duration of at least 1s such as 15s',
    description:
      'embedded store: how soon a standby process takes the worker duties over from one that went away',
    parse: (s) => ((parseDuration(s) ?? 0) >= 1000 ? parseDuration(s) : undefined),
  }),
  UV_THREADPOOL_SIZE: declare('UV_THREADPOOL_SIZE')({
    default: '4',
    expected: 'a whole number from 1 to 1024',
    description:
      "threads of libuv's pool, read by Node.js itself at start; image decodes must leave 2 of them to password hashing",
    parse: (s) => (/^[1-9]\d{0,3}$/.test(s) && Number(s) <= 1024 ? Number(s) : undefined),
  }),

  DATA_DIR: declare('DATA_DIR')({
    default: './data',
    expected: 'a directory',
    description: 'embedded event store, read models, blobs and development secrets',
    parse: text,
  }),
  EVENTSTORE_URL: declare('EVENTSTORE_URL')({
    default: null,
    defaultShown: 'none: embedded SQLite',
    expected: urlForm(eventStoreSchemes, 'esdb://host:2113?tls=false'),
    description: 'use EventStoreDB for the events',
    parse: url(eventStoreSchemes),
  }),
  MONGODB_URL: declare('MONGODB_URL')({
    default: null,
    defaultShown: 'none: embedded SQLite',
    expected: urlForm(['mongodb', 'mongodb+srv'], 'mongodb://host:27017/observations'),
    description: 'use MongoDB for the read models, blobs and limits',
    parse: url(['mongodb', 'mongodb+srv']),
  }),
  DATABASE_URL: declare('DATABASE_URL')({
    default: null,
    defaultShown: 'none: embedded SQLite',
    expected: urlForm(['postgres', 'postgresql'], 'postgres://user:password@host:5432/observations'),
    description:
      'use PostgreSQL for every store: the events unless EVENTSTORE_URL is set, the others unless MONGODB_URL is; its tables are migrated on start',
    parse: url(['postgres', 'postgresql']),
  }),
  DATABASE_POOL_SIZE: declare('DATABASE_POOL_SIZE')({
    default: '10',
    expected: 'a positive whole number',
    description: 'PostgreSQL connections one process opens at most, all its stores together',
    parse: positiveCount,
  }),

  PLATFORM_ADMIN_KEY: declare('PLATFORM_ADMIN_KEY')({
    default: null,
    defaultShown: `${generated}, logged once`,
    expected: secretForm,
    description: "the platform operator's API key: creates tenants",
    requiredInProduction: true,
    secret: true,
    parse: text,
  }),
  CURSOR_SECRET: declare('CURSOR_SECRET')({
    default: null,
    defaultShown: generated,
    expected: secretForm,
    description: 'signs list cursors',
    requiredInProduction: true,
    secret: true,
    parse: text,
  }),
  SIGNING_KEYS_FILE: declare('SIGNING_KEYS_FILE')({
    default: null,
    defaultShown: '`DATA_DIR/signing-keys.json`, created in development',
    expected: 'the path of a keyring made by `obs keys rotate`',
    description: 'the ES256 keys that sign access tokens; every instance reads the same file',
    requiredInProduction: true,
    parse: text,
  }),
  WEBHOOK_SECRET_KEY: declare('WEBHOOK_SECRET_KEY')({
    default: null,
    defaultShown: generated,
    expected: secretForm,
    description: "seals the webhook subscriptions' signing secrets in their events",
    requiredInProduction: true,
    secret: true,
    parse: text,
  }),
  IDEMPOTENCY_SECRET_KEY: declare('IDEMPOTENCY_SECRET_KEY')({
    default: null,
    defaultShown: generated,
    expected: secretForm,
    description: 'seals the kept `Idempotency-Key` answers (AES-256-GCM)',
    requiredInProduction: true,
    secret: true,
    parse: text,
  }),

  TOKEN_AUDIENCE: declare('TOKEN_AUDIENCE')({
    default: 'observation-service',
    expected: 'a text',
    description: 'the `aud` of the access tokens',
    parse: text,
  }),
  ACCESS_TOKEN_TTL: declare('ACCESS_TOKEN_TTL')({
    default: '15m',
    expected: 'a duration such as 15m',
    description: 'lifetime of an access token',
    parse: duration,
  }),
  REFRESH_TOKEN_TTL: declare('REFRESH_TOKEN_TTL')({
    default: '30d',
    expected: 'a duration such as 30d',
    description: 'lifetime of a refresh token',
    parse: duration,
  }),

  BODY_LIMIT: declare('BODY_LIMIT')({
    default: '1mb',
    expected: 'a size such as 1mb or 512kb',
    description: 'largest JSON body; larger bodies get `413`',
    parse: parseByteSize,
  }),
  CONSISTENCY_TIMEOUT: declare('CONSISTENCY_TIMEOUT')({
    default: '5s',
    expected: 'a duration such as 5s',
    description: 'how long a list with `minPosition` waits for its projection',
    parse: duration,
  }),
  IDEMPOTENCY_TTL: declare('IDEMPOTENCY_TTL')({
    default: '24h',
    expected: 'a duration above zero such as 24h',
    description: 'how long the answer to a `POST` with an `Idempotency-Key` is replayed',
    parse: positiveDuration,
  }),
  RATE_LIMIT: declare('RATE_LIMIT')({
    default: '600/1m',
    expected: 'requests per window such as 600/1m, or off',
    description:
      'requests per credential per window; counted per instance in memory, or for all instances together in PostgreSQL (DATABASE_URL without MONGODB_URL)',
    // null: `off`.
    parse: (s): RateLimitPolicy | null | undefined => parseRateLimit(s),
  }),
  CORS_ORIGINS: declare('CORS_ORIGINS')({
    default: null,
    defaultShown: 'none: no CORS headers',
    expected: 'a comma-separated list of origins such as https://app.example.com, or *',
    description: 'origins allowed cross-origin requests',
    parse: (s): CorsOrigins | undefined => parseCorsOrigins(s),
  }),
  HTTP_HEADERS_TIMEOUT: declare('HTTP_HEADERS_TIMEOUT')({
    default: '20s',
    expected: 'a duration above zero such as 20s, at most HTTP_REQUEST_TIMEOUT',
    description: "time for a request's headers to arrive; then `408` and the connection is closed",
    parse: positiveDuration,
  }),
  HTTP_REQUEST_TIMEOUT: declare('HTTP_REQUEST_TIMEOUT')({
    default: '60s',
    expected: 'a duration above zero such as 60s',
    description: 'time for a whole request, body included, to arrive',
    parse: positiveDuration,
  }),
  HTTP_KEEP_ALIVE_TIMEOUT: declare('HTTP_KEEP_ALIVE_TIMEOUT')({
    default: '5s',
    expected: 'a duration above zero such as 5s',
    description: 'idle keep-alive connections are closed after this',
    parse: positiveDuration,
  }),
  TRUST_PROXY: declare('TRUST_PROXY')({
    default: 'off',
    expected: 'the number of trusted proxy hops (1-9), or off',
    description: 'proxies in front whose `X-Forwarded-For` gives the client address (see Behind a TLS proxy)',
    parse: (s) => (s === 'off' || s === 'false' || s === '0' ? 0 : /^[1-9]$/.test(s) ? Number(s) : undefined),
  }),

  MEDIA_MAX_BYTES: declare('MEDIA_MAX_BYTES')({
    default: '10mb',
    expected: 'a size such as 10mb or 512kb',
    description: 'largest image upload; larger bodies get `413`',
    parse: parseByteSize,
  }),
  MEDIA_MAX_PIXELS: declare('MEDIA_MAX_PIXELS')({
    default: String(defaultDecodeLimits.maxPixels),
    expected: 'a positive whole number of pixels such as 40000000',
    description:
      'largest image decoded, in pixels (width × height), checked from the header; larger get `413`',
    parse: wholeNumber(/^[1-9]\d{0,11}$/),
  }),
  MEDIA_MAX_DECODED_BYTES: declare('MEDIA_MAX_DECODED_BYTES')({
    default: String(defaultDecodeLimits.maxDecodedBytes),
    expected: 'a size above zero such as 160000000 or 150mb',
    description:
      'largest image decoded, in bytes (width × height × channels × bytes per sample); larger get `413`',
    parse: (s) => parseByteSize(s) || undefined,
  }),
  MEDIA_DECODE_CONCURRENCY: declare('MEDIA_DECODE_CONCURRENCY')({
    default: '1',
    expected: 'a positive whole number, at most UV_THREADPOOL_SIZE − 2',
    description: 'image decodes at once, uploads and CV jobs together (see Image decoding and memory)',
    parse: positiveCount,
  }),
  MEDIA_DECODE_QUEUE: declare('MEDIA_DECODE_QUEUE')({
    default: '8',
    expected: 'a positive whole number',
    description: 'uploads that may wait for a decode; beyond it `503` with `Retry-After`',
    parse: positiveCount,
  }),

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

  SMTP_URL: declare('SMTP_URL')({
    default: null,
    defaultShown: 'none: e-mails go to `DATA_DIR/outbox/` as `.eml` files',
    expected: urlForm(['smtp', 'smtps'], 'smtps://user:password@mail.example.com'),
    description: 'the SMTP server for notification e-mails (a disabled webhook subscription)',
    parse: url(['smtp', 'smtps']),
  }),
  MAIL_FROM: declare('MAIL_FROM')({
    default: 'Observation service <no-reply@localhost>',
    expected: 'a sender such as `Ops <ops@example.com>`',
    description: 'the `From` of notification e-mails',
    parse: (s) => (s.includes('@') ? s : undefined),
  }),

  CV_JOB_TIMEOUT: declare('CV_JOB_TIMEOUT')({
    default: '60s',
    expected: 'a duration above zero such as 60s',
    description: 'longest run of a CV job before it fails with `timeout`',
    parse: positiveDuration,
  }),
  CV_CONCURRENCY: declare('CV_CONCURRENCY')({
    default: '4',
    expected: 'a positive whole number',
    description: 'CV jobs one instance runs at once',
    parse: positiveCount,
  }),
  CV_WORKERS: declare('CV_WORKERS')({
    default: 'auto',
    defaultShown: 'auto: the cores less one, at least 1',
    expected: 'auto or a positive whole number',
    description:
      'threads running the built-in detector (objects-coco), each holding its model (about 100 MB; docs/operations.md)',
    parse: (s) => (s === 'auto' ? Math.max(1, availableParallelism() - 1) : positiveCount(s)),
  }),
  CV_DETECTOR_WEIGHTS_DIR: declare('CV_DETECTOR_WEIGHTS_DIR')({
    default: null,
    defaultShown: 'the installed @vladmandic/human package',
    expected: 'a folder holding centernet.json and centernet.bin',
    description:
      "where objects-coco's weights are read from; their SHA-256 must match (a copy of the package's files, for a read-only image)",
    echo: 'path',
    parse: (s) => s,
  }),
  CV_REMOTE_MODELS: declare('CV_REMOTE_MODELS')({
    default: null,
    defaultShown: 'none',
    expected: 'a JSON list of {"name", "url", "timeout", "protocol": "json" or "tensor", …}',
    description:
      'models behind inference servers (Open Inference Protocol: our JSON contract, or YOLO tensors on Triton or KServe; docs/api.md); not with CV_MODELS_FILE',
    echo: 'never',
    parse: remoteModels,
  }),
  CV_MODELS_FILE: declare('CV_MODELS_FILE')({
    default: null,
    defaultShown: 'none',
    expected: 'the path of a file holding the JSON of CV_REMOTE_MODELS',
    description: 'the same JSON in a file, instead of CV_REMOTE_MODELS',
    echo: 'path',
    parse: (path) => remoteModels(readFileSync(path, 'utf8')),
  }),

  AUDIT_DIGEST_SCHEDULE: declare('AUDIT_DIGEST_SCHEDULE')({
    default: '0 * * * *',
    expected: 'a cron expression such as "0 * * * *", or off',
    description:
      "when the per-tenant audit digests are appended (node-cron, the service's time zone); `off`: only by `obs audit digest`",
    parse: (s) => (s === 'off' ? null : cronValidate(s) ? s : undefined),
  }),

  METRICS: declare('METRICS')({
    default: 'platform',
    expected: `one of ${metricsModes.join(', ')}`,
    description:
      '`GET /metrics`: `platform` on the API port to the platform key, `port` open on METRICS_PORT, `off` nowhere',
    parse: oneOf(metricsModes),
  }),
  METRICS_PORT: declare('METRICS_PORT')({
    default: '9464',
    expected: 'a TCP port from 1 to 65535',
    description: 'the port of the metrics listener (on HOST) when METRICS=port',
    parse: (s) => tcpPort(s) || undefined,
  }),
  OTEL_EXPORTER_OTLP_ENDPOINT: declare('OTEL_EXPORTER_OTLP_ENDPOINT')({
    default: null,
    defaultShown: 'none: no traces exported',
    expected: urlForm(['http', 'https'], 'http://collector:4318'),
    description:
      'export traces over OTLP/HTTP there; the SDK reads the other `OTEL_*` variables itself (e.g. `OTEL_EXPORTER_OTLP_HEADERS`)',
    parse: url(['http', 'https']),
  }),
  OTEL_SERVICE_NAME: declare('OTEL_SERVICE_NAME')({
    default: 'observation-service',
    expected: 'a text',
    description: 'the `service.name` of the exported traces',
    parse: text,
  }),
} as const;

export type SettingName = keyof typeof settings;
export const allSettings: readonly Setting[] = Object.values(settings);
export const settingNames: ReadonlySet<string> = new Set(Object.keys(settings));

type Environment = Readonly<Record<string, string | undefined>>;

/** The variable's text, trimmed; undefined when it is unset or blank (as compose files pass unset ones). */
export const givenText = (env: Environment, setting: Setting): string | undefined =>
  env[setting.name]?.trim() || undefined;

/** `URL`s and JSON holding `scheme://user:password@`: the password replaced by `[redacted]`. */
export const redactCredentials = (value: string): string =>
  value.replace(/([a-z][a-z0-9+.-]*:\/\/[^\s:/@]*:)[^\s@/]*@/gi, '$1[redacted]@');

const invalid = (setting: Setting, text: string, reason: string): ConfigError => {
  const shown = {
    value: `=${redactCredentials(text)}`,
    path: ` (${text})`,
    never: '',
  }[setting.echo];
  return new ConfigError(`${setting.name}${shown} is not valid: ${reason}`);
};

const parsed = <T>(setting: Setting<T>, text: string): T => {
  let value: T | undefined;
  try {
    value = setting.parse(text);
  } catch (error) {
    // Newer Node.js quotes the JSON around a syntax error: a URL's password could be in it.
    const reason = redactCredentials((error as Error).message);
    throw invalid(setting, text, `${reason}; expected ${setting.expected}`);
  }
  if (value === undefined) throw invalid(setting, text, `expected ${setting.expected}`);
  return value;
};

/** A setting with a default: its value, from the variable or the default. Throws ConfigError when invalid. */
export const readSetting = <T>(env: Environment, setting: Setting<T, string>): T =>
  parsed(setting, givenText(env, setting) ?? setting.default);

/** A setting without a default: its value, or null when unset. Throws ConfigError when invalid. */
export const readOptionalSetting = <T>(env: Environment, setting: Setting<T, null>): T | null => {
  const given = givenText(env, setting);
  return given === undefined ? null : parsed(setting, given);
};
