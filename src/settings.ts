import { auditSettings } from './settings/audit.js';
import { consoleSettings } from './settings/console.js';
import { cvSettings } from './settings/cv.js';
import { ConfigError, type Setting } from './settings/declare.js';
import { httpSettings } from './settings/http.js';
import { mailSettings } from './settings/mail.js';
import { mediaSettings } from './settings/media.js';
import { observabilitySettings } from './settings/observability.js';
import { processSettings } from './settings/process.js';
import { secretSettings } from './settings/secrets.js';
import { storeSettings } from './settings/stores.js';
import { tokenSettings } from './settings/tokens.js';
import { webhookSettings } from './settings/webhooks.js';

export { ConfigError, type Setting } from './settings/declare.js';
export { metricsModes, type MetricsMode } from './settings/observability.js';
export { logLevels, roles, type Role } from './settings/process.js';
export { minDistinctCharacters, minSecretLength } from './settings/secrets.js';

/**
 * Every environment variable the service reads, declared once: config.ts reads them through these
 * declarations, the start-up log and warnings list them, and `npm run docs:settings` writes the table in
 * docs/operations.md#configuration from them. A setting read anywhere else fails test/unit/settings.test.ts.
 * Each group is declared in a module of its own under src/settings/; they come here in the order of the
 * table in docs/operations.md: process, stores, secrets, then feature by feature.
 */
export const settings = {
  ...processSettings,
  ...storeSettings,
  ...secretSettings,
  ...tokenSettings,
  ...httpSettings,
  ...mediaSettings,
  ...webhookSettings,
  ...mailSettings,
  ...cvSettings,
  ...auditSettings,
  ...consoleSettings,
  ...observabilitySettings,
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
