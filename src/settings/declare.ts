import { parseDuration } from '../core/durations.js';

// How a setting is declared (src/settings.ts assembles them), and the forms values take.

/** One environment variable, declared once (the declarations: src/settings.ts). */
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

/** A setting waiting for its name, which `namedSettings` gives it from its key. */
type Unnamed<S extends Setting = Setting> = (name: string) => S;

export const declare =
  <T, const D extends string | null>(declaration: Declaration<T, D>): Unnamed<Setting<T, D>> =>
  (name) => ({
    name,
    requiredInProduction: false,
    secret: false,
    echo: declaration.secret ? 'never' : 'value',
    ...declaration,
  });

/** A group of settings, each named by its key: the variable's name is written once. */
export const namedSettings = <G extends Record<string, Unnamed>>(
  group: G,
): { readonly [Name in keyof G]: ReturnType<G[Name]> } =>
  Object.fromEntries(Object.entries(group).map(([name, unnamed]) => [name, unnamed(name)])) as {
    readonly [Name in keyof G]: ReturnType<G[Name]>;
  };

// The forms values take, shared by the declarations below.
export const wholeNumber = (pattern: RegExp) => (s: string) => (pattern.test(s) ? Number(s) : undefined);
export const positiveCount = wholeNumber(/^[1-9]\d{0,5}$/);
export const tcpPort = (s: string) => (/^\d+$/.test(s) && Number(s) < 65536 ? Number(s) : undefined);
export const duration = (s: string) => parseDuration(s);
export const positiveDuration = (s: string) => parseDuration(s) || undefined;
export const flag = (s: string) => ({ true: true, false: false })[s];
export const oneOf =
  <const V extends string>(values: readonly V[]) =>
  (s: string) =>
    values.find((value) => value === s);
export const text = (s: string) => s;
export const url = (schemes: readonly string[]) => (s: string) =>
  schemes.some((scheme) => s.startsWith(`${scheme}://`)) ? s : undefined;
export const urlForm = (schemes: readonly string[], example: string) =>
  `a URL starting with ${schemes.map((scheme) => `${scheme}://`).join(' or ')}, such as ${example}`;

/**
 * A common kind of setting: how its values read (`expected`, which may quote the default) and parse. Each
 * setting of the kind is then one call with its default and what it is for.
 */
const kind =
  <T>(expected: (defaultText: string) => string, parse: (text: string) => T | undefined) =>
  (defaultText: string, description: string) =>
    declare({ default: defaultText, expected: expected(defaultText), description, parse });

export const durationSetting = kind((shown) => `a duration such as ${shown}`, duration);
export const positiveDurationSetting = kind(
  (shown) => `a duration above zero such as ${shown}`,
  positiveDuration,
);
export const countSetting = kind(() => 'a positive whole number', positiveCount);
export const flagSetting = kind(() => 'true or false', flag);
export const textSetting = kind(() => 'a text', text);
export const choiceSetting = <const V extends string>(
  values: readonly V[],
  defaultText: V,
  description: string,
) => kind(() => `one of ${values.join(', ')}`, oneOf(values))(defaultText, description);
/** A URL of one of `schemes`, unset by default (`defaultShown` says what then). */
export const urlSetting = (
  schemes: readonly string[],
  example: string,
  { defaultShown, description }: { defaultShown: string; description: string },
) =>
  declare({
    default: null,
    defaultShown,
    expected: urlForm(schemes, example),
    description,
    parse: url(schemes),
  });
