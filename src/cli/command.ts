import { ConfigError, type Config } from '../config.js';
import { ValidationError } from '../core/errors.js';
import { UntilError } from '../audit/replay.js';
import { BuildInputError } from '../readmodels/rebuild.js';

/**
 * What a command is, and how it ends. Exit codes: 0 done, 1 failed, 2 bad usage or input, 130 interrupted
 * (Ctrl-C during a rebuild or build).
 */

/** Prints the text, or with `--json` the value. */
export type Output = (text: string, json: unknown) => void;

/** What every command is given besides its own arguments. */
export interface Context {
  config: Config;
  print: Output;
  /** `--json`: print has JSON printed; text only (a table's header) is left out. */
  json: boolean;
  /** `--create`: start a new DATA_DIR where there is none, instead of refusing (exit code 2). */
  create: boolean;
}

export interface Command {
  /** The command's line in `obs <command> --help`, then what it does. */
  help: string;
  run: (args: string[], context: Context) => Promise<void>;
}

/** Commands by the words that name them: `tenant create`, `projections parked retry`, `export`. */
export type Commands = Record<string, Command>;

/** The operator's mistake, which the operator can fix: exit code 2. */
export class UsageError extends Error {}

/** A flag or argument the command does not take: a UsageError that points at the command's help. */
export class FlagError extends UsageError {}

/** A command's own verdict, such as a verification that found a broken link: exit with this code. */
export class ExitError extends Error {
  constructor(readonly code: number) {
    super(`exit ${code}`);
  }
}

/** Rebuild and snapshot inputs the operator can fix: exit code 2. */
export const inputErrorsAsUsage = async <T>(work: () => Promise<T>): Promise<T> => {
  try {
    return await work();
  } catch (error) {
    if (error instanceof BuildInputError) throw new UsageError(error.message);
    throw error;
  }
};

/** The message and exit code of an error a command threw (not an ExitError, which carries its own code). */
export const failure = (error: unknown): { message: string; code: number } => {
  const bad =
    error instanceof UntilError ||
    error instanceof UsageError ||
    error instanceof ValidationError ||
    error instanceof ConfigError;
  const message =
    error instanceof ValidationError
      ? error.errors.map((e) => `--${e.path}: ${e.message}`).join('\n')
      : String((error as Error).message);
  return { message, code: bad ? 2 : 1 };
};

/**
 * Runs long work that Ctrl-C stops cleanly: the first SIGINT aborts the signal (the work stops after the
 * batch in flight), a second one exits at once.
 */
export const interruptible = async <T>(work: (signal: AbortSignal) => Promise<T>): Promise<T> => {
  const controller = new AbortController();
  const onSignal = () => {
    if (controller.signal.aborted) process.exit(130);
    controller.abort();
  };
  process.on('SIGINT', onSignal);
  try {
    return await work(controller.signal);
  } finally {
    process.off('SIGINT', onSignal);
  }
};
