import { parseArgs, type ParseArgsConfig } from 'node:util';
import { tenantIdPattern } from '../core/ids.js';
import { ValidationError } from '../core/errors.js';
import { findProjection, projections } from '../domains.js';
import type { RegisteredProjection } from '../readmodels/registered.js';
import { FlagError, UsageError } from './command.js';

/** Checks on flags and names that more than one command takes; a bad one is a UsageError (exit code 2). */

export const requireTenant = (tenant: string | undefined): string => {
  if (!tenant) throw new UsageError('--tenant <id> is required, e.g. --tenant t_01m7…');
  if (!tenantIdPattern.test(tenant)) {
    throw new UsageError(
      `--tenant ${tenant} is not a tenant id: t_ then lower-case letters and digits, e.g. t_01m7…`,
    );
  }
  return tenant;
};

/**
 * `--until -3`: parseArgs takes a value that starts with a dash for a forgotten value followed by an option.
 * No option of ours is a single dash and a word, so such a value is the option's: `--until=-3`, which the
 * option's own check then refuses in our words.
 */
export const dashValues = (args: readonly string[]): string[] => {
  const joined: string[] = [];
  for (let i = 0; i < args.length; i += 1) {
    const arg = args[i]!;
    const next = args[i + 1];
    if (/^--[a-z][a-z-]*$/.test(arg) && next !== undefined && /^-[^-]/.test(next)) {
      joined.push(`${arg}=${next}`);
      i += 1;
    } else joined.push(arg);
  }
  return joined;
};

/** parseArgs' own errors, in our words: the first quoted token of its message is the offending one. */
const parseArgsMessage = (error: Error & { code?: string }): string | undefined => {
  const token = /'([^']*)'/.exec(error.message)?.[1] ?? '';
  const flag = token.split(' ')[0];
  if (error.code === 'ERR_PARSE_ARGS_UNKNOWN_OPTION') return `Unknown option ${token}`;
  if (error.code === 'ERR_PARSE_ARGS_UNEXPECTED_POSITIONAL') return `Unexpected argument ${token}`;
  if (error.code === 'ERR_PARSE_ARGS_INVALID_OPTION_VALUE') {
    return error.message.includes('does not take an argument')
      ? `${flag} takes no value`
      : `${flag} needs a value`;
  }
  return undefined;
};

/** parseArgs, strict, with `--x -3` read as a value, and a UsageError (exit code 2) for what it refuses. */
export const flags = <T extends Omit<ParseArgsConfig, 'args' | 'strict'>>(args: string[], config: T) => {
  try {
    return parseArgs({ ...config, args: dashValues(args), strict: true as const });
  } catch (error) {
    const message = error instanceof Error ? parseArgsMessage(error) : undefined;
    throw message ? new FlagError(message) : error;
  }
};

export const batchSizeOption = (text: string | undefined): number | undefined => {
  if (text === undefined) return undefined;
  if (!/^[1-9]\d{0,5}$/.test(text)) throw new UsageError('--batch-size must be a whole number from 1');
  return Number(text);
};

/**
 * The options of a replay into a read model (a rebuild, a snapshot) that the command's flags set
 * (--restart, --tenant, --batch-size), besides its stop signal and where it reports its progress.
 */
export const replayOptions = <Progress>(
  signal: AbortSignal,
  onProgress: (progress: Progress) => void,
  flags: { restart: boolean | undefined; tenantId: string | undefined; batchSize: number | undefined },
) => ({
  signal,
  onProgress,
  restart: flags.restart === true,
  ...(flags.tenantId ? { tenantId: flags.tenantId } : {}),
  ...(flags.batchSize ? { batchSize: flags.batchSize } : {}),
});

/** Validation errors name body fields; on the command line they should name the flags. */
export const withFlagNames = <T>(flags: Record<string, string>, decode: () => T): T => {
  try {
    return decode();
  } catch (error) {
    if (!(error instanceof ValidationError)) throw error;
    throw new ValidationError(error.errors.map((e) => ({ ...e, path: flags[e.path] ?? e.path })));
  }
};

export const projectionNames = () => projections.map((entry) => entry.projection.name).join(', ');

/** The read models `export` takes, by their export names (`cv-jobs`). */
export const exportNames = () => projections.flatMap((entry) => entry.export?.name ?? []).join(', ');

export const knownProjection = (name: string): RegisteredProjection => {
  const found = findProjection(name);
  if (!found) throw new UsageError(`Unknown projection ${name}; known: ${projectionNames()}`);
  return found;
};
