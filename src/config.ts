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
}

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
  const cursorSecret = env.CURSOR_SECRET?.trim() || null;
  if (production && !cursorSecret) {
    throw new ConfigError('NODE_ENV=production needs every secret set explicitly: CURSOR_SECRET is missing');
  }
  return {
    port: read(
      env,
      'PORT',
      '3000',
      (s) => (/^\d+$/.test(s) && Number(s) < 65536 ? Number(s) : undefined),
      'a TCP port',
    ),
    host: env.HOST?.trim() || '127.0.0.1',
    dataDir: env.DATA_DIR?.trim() || './data',
    eventStoreUrl: optionalUrl(env, 'EVENTSTORE_URL', ['esdb', 'esdb+discover', 'kurrentdb', 'kdb']),
    mongodbUrl: optionalUrl(env, 'MONGODB_URL', ['mongodb', 'mongodb+srv']),
    production,
    logLevel: env.LOG_LEVEL?.trim() || 'info',
    bodyLimit: read(env, 'BODY_LIMIT', '1mb', parseByteSize, 'a size such as 1mb or 512kb'),
    consistencyTimeoutMs: read(env, 'CONSISTENCY_TIMEOUT', '5s', parseDuration, 'a duration such as 5s'),
    cursorSecret,
  };
};
