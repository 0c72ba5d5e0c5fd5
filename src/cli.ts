import { randomUUID } from 'node:crypto';
import { parseArgs } from 'node:util';
import { tenantsProjection } from '../projections/tenants.js';
import { readKeys, retireKey, rotateKeys } from './auth/signing-keys.js';
import { ConfigError, loadConfig, type Config } from './config.js';
import { newId } from './core/ids.js';
import { ValidationError } from './core/errors.js';
import { CreateTenantBody } from './credentials/codecs.js';
import { decodeOrThrow } from './http/codec.js';
import { platformPartition } from './readmodels/aggregate-projection.js';
import { openStores } from './stores.js';
import { projectionRunner } from './readmodels/runner.js';
import { pino } from 'pino';
import { createTenant } from './tenants/create.js';
import type { Tenant } from './tenants/tenant.js';

/**
 * The operator's command line: the same stores and the same commands as the API, offline.
 * Exit codes: 0 done, 1 failed, 2 bad usage or input.
 */
const usage = `Usage: npm run cli -- <command> [options]

Commands:
  tenant create --name <name> --email <address>   create a tenant; prints its first admin API key, once
  tenant list                                     list tenants
  keys list                                       list the token signing keys
  keys rotate                                     add a signing key; it signs new tokens from now on
  keys retire <kid>                               stop accepting tokens signed with this key

Options:
  --json     print JSON instead of text
  --help     show help for a command

The stores are the ones the service is configured for (DATA_DIR, EVENTSTORE_URL, MONGODB_URL).`;

class UsageError extends Error {}

/** Validation errors name body fields; on the command line they should name the flags. */
const withFlagNames = <T>(flags: Record<string, string>, decode: () => T): T => {
  try {
    return decode();
  } catch (error) {
    if (!(error instanceof ValidationError)) throw error;
    throw new ValidationError(error.errors.map((e) => ({ ...e, path: flags[e.path] ?? e.path })));
  }
};

type Output = (text: string, json: unknown) => void;

const commands: Record<
  string,
  { help: string; run: (args: string[], config: Config, print: Output) => Promise<void> }
> = {
  'tenant create': {
    help: 'tenant create --name <name> --email <address>\n  Creates a tenant and its first admin API key.',
    run: async (args, config, print) => {
      const { values } = parseArgs({
        args,
        options: { name: { type: 'string' }, email: { type: 'string' } },
      });
      const body = withFlagNames({ notificationEmail: 'email' }, () =>
        decodeOrThrow(CreateTenantBody, { name: values.name, notificationEmail: values.email }),
      );
      const stores = await openStores(config);
      try {
        const { tenant, adminApiKey } = await createTenant(
          stores.eventStore,
          (prefix) => newId(prefix),
          (tenantId) => ({
            tenantId,
            actor: 'cli',
            correlationId: randomUUID(),
            causationId: null,
            now: new Date(),
            newEventId: () => randomUUID(),
          }),
          body,
        );
        print(
          `Created tenant ${tenant.id} (${tenant.name}).\nAdmin API key, shown only now:\n  ${adminApiKey}`,
          { ...tenant, adminApiKey },
        );
      } finally {
        await stores.close();
      }
    },
  },
  'tenant list': {
    help: 'tenant list\n  Lists every tenant, oldest first.',
    run: async (_args, config, print) => {
      const stores = await openStores(config);
      try {
        // Offline there is no running projection: catch the read model up before reading it.
        const runner = projectionRunner(tenantsProjection, { ...stores, logger: pino({ level: 'silent' }) });
        await runner.start();
        await runner.waitFor(await stores.eventStore.headPosition(), 30_000);
        await runner.stop();
        const tenants = await stores.readModels.list<Tenant>(tenantsProjection.collection.name, {
          tenantId: platformPartition,
          filters: [],
          sort: { field: 'createdAt', direction: 'asc' },
          limit: 10_000,
        });
        print(
          tenants.map((t) => `${t.id}  ${t.name}  ${t.notificationEmail}`).join('\n') || '(no tenants)',
          tenants,
        );
      } finally {
        await stores.close();
      }
    },
  },
  'keys list': {
    help: 'keys list\n  Lists the signing keys in SIGNING_KEYS_FILE (never their private parts).',
    run: (_args, config, print) => {
      const keys = readKeys(config.signingKeysFile).map(({ kid, createdAt, retiredAt }) => ({
        kid,
        createdAt,
        retiredAt,
      }));
      print(
        keys
          .map((k) => `${k.kid}  created ${k.createdAt}${k.retiredAt ? `  retired ${k.retiredAt}` : ''}`)
          .join('\n') || '(no keys)',
        keys,
      );
      return Promise.resolve();
    },
  },
  'keys rotate': {
    help: 'keys rotate\n  Adds a new ES256 key. Running services reload the file: the new key signs, the old ones still verify.',
    run: (_args, config, print) => {
      const key = rotateKeys(config.signingKeysFile);
      print(`New signing key ${key.kid}`, { kid: key.kid, createdAt: key.createdAt });
      return Promise.resolve();
    },
  },
  'keys retire': {
    help: 'keys retire <kid>\n  Retires a key: tokens signed with it stop verifying.',
    run: (args, config, print) => {
      const kid = args[0];
      if (!kid || args.length > 1) throw new UsageError('keys retire needs exactly one <kid>');
      if (!retireKey(config.signingKeysFile, kid))
        throw new UsageError(`No active key ${kid}; see "keys list"`);
      print(`Retired ${kid}`, { kid, retired: true });
      return Promise.resolve();
    },
  },
};

const main = async (argv: string[]): Promise<number> => {
  const json = argv.includes('--json');
  const help = argv.includes('--help') || argv.includes('-h');
  const args = argv.filter((arg) => arg !== '--json' && arg !== '--help' && arg !== '-h');
  const name = args.slice(0, 2).join(' ');
  const command = commands[name];
  if (!command) {
    console.log(usage);
    return help && args.length === 0 ? 0 : 2;
  }
  if (help) {
    console.log(`Usage: npm run cli -- ${command.help}`);
    return 0;
  }
  const print: Output = (text, value) => console.log(json ? JSON.stringify(value, null, 2) : text);
  try {
    await command.run(args.slice(2), loadConfig(), print);
    return 0;
  } catch (error) {
    const bad =
      error instanceof UsageError || error instanceof ValidationError || error instanceof ConfigError;
    const message =
      error instanceof ValidationError
        ? error.errors.map((e) => `--${e.path}: ${e.message}`).join('\n')
        : String((error as Error).message);
    console.error(json ? JSON.stringify({ error: message }) : `error: ${message}`);
    return bad || (error as { code?: string }).code === 'ERR_PARSE_ARGS_UNKNOWN_OPTION' ? 2 : 1;
  }
};

process.exitCode = await main(process.argv.slice(2));
