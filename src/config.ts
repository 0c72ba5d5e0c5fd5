import { join } from 'node:path';
import { parseByteSize, parseDuration } from './core/durations.js';

/** Everything the service reads from its environment; README.md's configuration table mirrors this. */
export interface Config {
  port: number;
  host: string;
  dataDir: string;
  eventStoreUrl: string | null;
  mongodbUrl: string | null;
  production: boolean;
  logLevel: string;
  bodyLimit: number;
  consistencyTimeoutMs: number;
  cursorSecret: string | null;
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
  smtpUrl: string | null;
  mailFrom: string;
}

/** Secrets that NODE_ENV=production insists on: a generated default would differ between instances. */
const productionSecrets = [
  'PLATFORM_ADMIN_KEY',
  'CURSOR_SECRET',
  'SIGNING_KEYS_FILE',
  'WEBHOOK_SECRET_KEY',
] as const;

export class ConfigError extends Error {}

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

export const loadConfig = (env: NodeJS.ProcessEnv = process.env): Config => {
  const production = env.NODE_ENV === 'production';
  const given = (name: string) => env[name]?.trim() || null;
  const missing = productionSecrets.filter((name) => !given(name));
  if (production && missing.length > 0) {
    throw new ConfigError(
      `NODE_ENV=production needs every secret set explicitly; missing: ${missing.join(', ')}`,
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
    logLevel: given('LOG_LEVEL') ?? 'info',
    bodyLimit: read(env, 'BODY_LIMIT', '1mb', parseByteSize, 'a size such as 1mb or 512kb'),
    consistencyTimeoutMs: read(env, 'CONSISTENCY_TIMEOUT', '5s', parseDuration, 'a duration such as 5s'),
    cursorSecret: given('CURSOR_SECRET'),
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
    smtpUrl: optionalUrl(env, 'SMTP_URL', ['smtp', 'smtps']),
    mailFrom: given('MAIL_FROM') ?? 'Observation service <no-reply@localhost>',
  };
};
