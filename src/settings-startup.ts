import type { Config } from './config.js';
import { allSettings, givenText, redactCredentials, settingNames, type Setting } from './settings.js';

type Environment = Readonly<Record<string, string | undefined>>;

/**
 * Name prefixes that mark a variable as meant for this service: `OBS_` and the first word of every setting
 * named in several words (`WEBHOOK_`, `CV_`, `MEDIA_`, `HTTP_`, `METRICS_`, …). Not the words other programs
 * share: `NODE_` (NODE_OPTIONS), `UV_` (libuv), `OTEL_` (the OpenTelemetry SDK reads its own), and the
 * generic `DATA_`, `PUBLIC_`, `LOG_`.
 */
const sharedPrefixes = new Set(['NODE', 'UV', 'OTEL', 'DATA', 'PUBLIC', 'LOG']);
export const ourPrefixes: readonly string[] = [
  'OBS_',
  ...new Set(
    [...settingNames]
      .filter((name) => name.includes('_'))
      .map((name) => name.slice(0, name.indexOf('_')))
      .filter((word) => !sharedPrefixes.has(word))
      .map((word) => `${word}_`),
  ),
];

/** Variables of others that carry one of our prefixes: proxies', and the API key the client's examples read. */
const foreignNames = new Set(['HTTP_PROXY', 'OBS_KEY']);

/** Edits (insertions, deletions, substitutions, swaps of neighbours) that turn `a` into `b`. */
export const editDistance = (a: string, b: string): number => {
  const rows = Array.from({ length: a.length + 1 }, (_, i) =>
    Array.from({ length: b.length + 1 }, (_, j) => (i === 0 ? j : j === 0 ? i : 0)),
  );
  const at = (i: number, j: number) => rows[i]![j]!;
  for (let i = 1; i <= a.length; i++) {
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      let best = Math.min(at(i - 1, j) + 1, at(i, j - 1) + 1, at(i - 1, j - 1) + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1])
        best = Math.min(best, at(i - 2, j - 2) + 1);
      rows[i]![j] = best;
    }
  }
  return at(a.length, b.length);
};

/**
 * The known name a variable's name is a slip of, if any: at most 2 edits away, ignoring case, but only 1
 * for names under 8 characters, since HOME is 2 edits from both HOST and ROLE.
 */
const meant = (variable: string): string | undefined => {
  const upper = variable.toUpperCase();
  let closest: { name: string; distance: number } | undefined;
  for (const name of settingNames) {
    const distance = editDistance(upper, name);
    const allowed = name.length < 8 ? 1 : 2;
    if (distance <= allowed && (!closest || distance < closest.distance)) closest = { name, distance };
  }
  return closest?.name;
};

/**
 * Warnings for variables that look meant for this service but that it does not read: a misspelt setting
 * (`WEBHOOK_TIMEOT`), or an unknown name with one of our prefixes (`OBS_COLOUR`). A value set under such a
 * name is silently not used, so the start-up log says so.
 */
export const settingWarnings = (env: Environment): string[] =>
  Object.keys(env)
    .filter((variable) => !settingNames.has(variable) && !variable.startsWith('OTEL_'))
    .filter((variable) => !foreignNames.has(variable.toUpperCase()))
    .flatMap((variable) => {
      const suggestion = meant(variable);
      if (suggestion) {
        return [`${variable} is not a setting of this service; did you mean ${suggestion}? It is ignored`];
      }
      if (ourPrefixes.some((prefix) => variable.startsWith(prefix))) {
        return [
          `${variable} is not a setting of this service, though its name looks like one; it is ignored (docs/operations.md#configuration)`,
        ];
      }
      return [];
    });

const effective = (env: Environment, config: Config, setting: Setting): string | null => {
  const given = givenText(env, setting);
  if (setting.secret) return given === undefined ? 'generated in development' : '[redacted] (given)';
  if (given !== undefined) return redactCredentials(given);
  if (setting.default !== null) return setting.default;
  if (setting.name === 'PUBLIC_URL') return config.publicUrl;
  if (setting.name === 'SIGNING_KEYS_FILE') return `${config.signingKeysFile} (created in development)`;
  return null;
};

/**
 * Every setting's effective value, for the start-up log line `configuration`: what was given, else the
 * default (null: unset, without a default). Secrets show only whether they were given; passwords in URLs
 * (MONGODB_URL, SMTP_URL, EVENTSTORE_URL, a model's URL in CV_REMOTE_MODELS) are replaced by `[redacted]`.
 */
export const configurationForLog = (env: Environment, config: Config): Record<string, string | null> =>
  Object.fromEntries(allSettings.map((setting) => [setting.name, effective(env, config, setting)]));
