import type { Commands } from './command.js';

/** The overview `obs` prints without a command, or with `--help` alone; each command has its own help. */
export const usage = `Usage: obs <command> [options]

Commands:
  tenant create --name <name> --email <address>   create a tenant; prints its first admin API key, once
  tenant list                                     list tenants
  keys list                                       list the token signing keys; marks the one that signs
  keys rotate                                     add a signing key; it signs new tokens from now on
  keys retire <kid>                               stop accepting tokens signed with this key
  secrets record                                  make this environment's secrets the ones every process must have
  audit verify --tenant <id>                      check every hash chain and digest of the tenant's history
  audit replay --tenant <id> [--stream <name>] [--until <time|position>]
                                                  print the history, or an aggregate's state at that point
  audit digest --tenant <id>                      record a digest of the stream heads now
  projections rebuild [name ...] [--tenant <id>]  rebuild read models beside the live ones, then swap them in
  projections status                              checkpoints, lag, last errors and parked events of the read models
  projections parked retry <name> [--position <n>]
                                                  apply parked events again; those that now apply leave the list
  projections parked skip <name> --position <n>   drop a parked event on purpose
  projections build <name> --until <time|position> --into <snapshot>
                                                  build a read model as of then, beside the live one
  projections drop <snapshot>                     remove a snapshot
  export <name> --format ndjson|csv [--tenant <id>] [--from <snapshot>]
                                                  stream a read model (or a snapshot) to stdout
  help [command]                                  this overview, or a command's help (as <command> --help)

Options:
  --json     print JSON instead of text
  --help     show help for a command (or a group: obs projections --help)
  --create   start a new DATA_DIR where there is none (without it, a missing DATA_DIR is refused)

The stores are the ones the service is configured for (DATA_DIR, DATABASE_URL, EVENTSTORE_URL, MONGODB_URL);
each command names the ones it uses on stderr ("obs: store sqlite:/srv/data").
Exit codes: 0 done, 1 failed (or found a broken link, a parked event), 2 bad usage or input, 130 interrupted.`;

/** `obs projections --help`: the help of every command in the group. */
export const groupHelp = (group: string, commands: Commands): string =>
  [
    `Usage: obs ${group} <command> [options]`,
    ...Object.entries(commands)
      .filter(([name]) => name.startsWith(`${group} `))
      .map(([, command]) => `\n  obs ${command.help.replace(/\n/g, '\n  ')}`),
  ].join('\n');
