import { loadConfig } from '../config.js';
import { auditCommands } from './audit.js';
import { ExitError, failure, type Commands } from './command.js';
import { exportCommands } from './export.js';
import { keyCommands } from './keys.js';
import { printer } from './output.js';
import { parkedCommands } from './parked.js';
import { projectionCommands } from './projections.js';
import { snapshotCommands } from './snapshots.js';
import { tenantCommands } from './tenants.js';
import { usage } from './usage.js';

/**
 * `obs`, the operator's command line: the same stores and the same commands as the API, offline. This file
 * only finds the command the words name and runs it; each group of commands has its own file beside it.
 */
const commands: Commands = {
  ...tenantCommands,
  ...keyCommands,
  ...auditCommands,
  ...projectionCommands,
  ...parkedCommands,
  ...snapshotCommands,
  ...exportCommands,
};

const main = async (argv: string[]): Promise<number> => {
  const json = argv.includes('--json');
  const help = argv.includes('--help') || argv.includes('-h');
  const args = argv.filter((arg) => arg !== '--json' && arg !== '--help' && arg !== '-h');
  // The longest command the words name: `projections parked retry`, `tenant create`, `export visits`.
  // Own properties only: `cli constructor` names no command of Object.prototype.
  const named = (name: string) => (Object.hasOwn(commands, name) ? commands[name] : undefined);
  const words = [3, 2, 1].find((n) => named(args.slice(0, n).join(' '))) ?? 1;
  const command = named(args.slice(0, words).join(' '));
  if (!command) {
    console.log(usage);
    return help && args.length === 0 ? 0 : 2;
  }
  if (help) {
    console.log(`Usage: obs ${command.help}`);
    return 0;
  }
  try {
    await command.run(args.slice(words), loadConfig(), printer(json));
    return 0;
  } catch (error) {
    if (error instanceof ExitError) return error.code;
    const { message, code } = failure(error);
    console.error(json ? JSON.stringify({ error: message }) : `error: ${message}`);
    return code;
  }
};

process.exitCode = await main(process.argv.slice(2));
