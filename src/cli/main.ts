import type { Commands } from './command.js';
import { groupHelp, usage } from './usage.js';

/**
 * `obs`, the operator's command line: the same stores and the same commands as the API, offline. This file
 * only finds the command the words name and runs it; each group of commands has its own file beside it,
 * loaded only when its first word is given, so that `obs help` loads none of them and `obs tenant list`
 * loads the stores it reads and not the HTTP service's modules.
 */
const groups: Record<string, () => Promise<Commands>> = {
  tenant: async () => (await import('./tenants.js')).tenantCommands,
  keys: async () => (await import('./keys.js')).keyCommands,
  secrets: async () => (await import('./secrets.js')).secretCommands,
  audit: async () => (await import('./audit.js')).auditCommands,
  projections: async () => ({
    ...(await import('./projections.js')).projectionCommands,
    ...(await import('./parked.js')).parkedCommands,
    ...(await import('./snapshots.js')).snapshotCommands,
  }),
  export: async () => (await import('./export.js')).exportCommands,
};

/** Flags every command takes, wherever they stand. */
const globalFlags = new Set(['--json', '--help', '-h', '--create']);

/** The words' meaning among the commands of their group: a command and its arguments, a group, or nothing known. */
const resolve = (commands: Commands, words: string[]) => {
  // The longest command the words name: `projections parked retry`, `tenant create`, `export`.
  // Own properties only: `obs constructor` names no command of Object.prototype.
  const named = (name: string) => (Object.hasOwn(commands, name) ? commands[name] : undefined);
  const length = [3, 2, 1].find((n) => words.length >= n && named(words.slice(0, n).join(' ')));
  if (length)
    return { kind: 'command' as const, name: words.slice(0, length).join(' '), rest: words.slice(length) };
  // The longest group the words start with (`projections parked`, `keys`), for its own list of commands.
  const group = [2, 1]
    .map((n) => words.slice(0, n).join(' '))
    .find((prefix) => prefix && Object.keys(commands).some((name) => name.startsWith(`${prefix} `)));
  return { kind: 'other' as const, group };
};

const main = async (argv: string[]): Promise<number> => {
  const json = argv.includes('--json');
  const create = argv.includes('--create');
  // `obs help projections build` is `obs projections build --help`: npx takes a --help next to the bin's
  // name for its own.
  const helpWord = argv[0] === 'help';
  const help = helpWord || argv.includes('--help') || argv.includes('-h');
  const words = argv.slice(helpWord ? 1 : 0).filter((arg) => !globalFlags.has(arg));
  if (words.length === 0) {
    // `obs` alone is a usage mistake; `obs --help` and `obs help` ask for the overview.
    if (help) console.log(usage);
    else console.error(usage);
    return help ? 0 : 2;
  }
  // Own properties only: `obs constructor` names no group of Object.prototype.
  const load = Object.hasOwn(groups, words[0]!) ? groups[words[0]!] : undefined;
  if (!load) {
    console.error(`obs: unknown command "${words.join(' ')}"\n\n${usage}`);
    return 2;
  }
  const commands = await load();
  const found = resolve(commands, words);
  if (found.kind === 'other') {
    const exact = found.group === words.join(' ');
    if (exact && help) {
      console.log(groupHelp(found.group!, commands));
      return 0;
    }
    console.error(
      exact
        ? `obs: "${found.group}" needs one of its commands\n\n${groupHelp(found.group!, commands)}`
        : `obs: unknown command "${words.join(' ')}"\n\n${found.group ? groupHelp(found.group, commands) : usage}`,
    );
    return 2;
  }
  const command = commands[found.name]!;
  if (help) {
    console.log(`Usage: obs ${command.help}`);
    return 0;
  }
  const [{ loadConfig }, { ExitError, failure, FlagError }, { printer }] = await Promise.all([
    import('../config.js'),
    import('./command.js'),
    import('./output.js'),
  ]);
  try {
    await command.run(found.rest, { config: loadConfig(), print: printer(json), json, create });
    return 0;
  } catch (error) {
    if (error instanceof ExitError) return error.code;
    const { message, code } = failure(error);
    const hint = error instanceof FlagError ? `\nSee "obs ${found.name} --help".` : '';
    console.error(json ? JSON.stringify({ error: message }) : `error: ${message}${hint}`);
    return code;
  }
};

process.exitCode = await main(process.argv.slice(2));
