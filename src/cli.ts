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
import { openStores, type Stores } from './stores.js';
import { recordDigest } from './audit/digest.js';
import { history, parseUntil, stateAt, UntilError } from './audit/replay.js';
import { verifyTenant } from './audit/verify.js';
import { streamHeadsProjection } from '../projections/stream-heads.js';
import { readAggregate } from './core/command-handler.js';
import type { EventStore } from './eventstore/port.js';
import { tenantDecider } from './tenants/tenant.js';
import { tenantStream } from './tenants/load.js';
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
  audit verify --tenant <id>                      check every hash chain and digest of the tenant's history
  audit replay --tenant <id> [--stream <name>] [--until <time|position>]
                                                  print the history, or an aggregate's state at that point
  audit digest --tenant <id>                      record a digest of the stream heads now

Options:
  --json     print JSON instead of text
  --help     show help for a command

The stores are the ones the service is configured for (DATA_DIR, EVENTSTORE_URL, MONGODB_URL).`;

class UsageError extends Error {}

/** A command's own verdict, such as a verification that found a broken link: exit with this code. */
class ExitError extends Error {
  constructor(readonly code: number) {
    super(`exit ${code}`);
  }
}

const requireTenant = (tenant: string | undefined): string => {
  if (!tenant || !/^t_[0-9a-z]{1,40}$/.test(tenant))
    throw new UsageError('--tenant <id> is required, e.g. --tenant t_01m7…');
  return tenant;
};

const withStores = async <T>(config: Config, work: (stores: Stores) => Promise<T>): Promise<T> => {
  const stores = await openStores(config);
  try {
    return await work(stores);
  } finally {
    await stores.close();
  }
};

const assertTenantExists = async (eventStore: EventStore, tenantId: string) => {
  const { state } = await readAggregate(eventStore, tenantDecider, tenantStream(tenantId));
  if (state.status === 'absent') throw new UsageError(`Tenant ${tenantId} does not exist`);
};

/** Progress on a terminal's stderr, rewritten in place; nothing when stderr is a file or a pipe. */
const progressLine = (what: string) => {
  const started = Date.now();
  const tty = process.stderr.isTTY;
  return {
    update: (count: number) => {
      if (!tty) return;
      const rate = Math.round(count / Math.max((Date.now() - started) / 1000, 0.001));
      process.stderr.write(`\r${what} ${count} events (${rate}/s)`);
    },
    done: () => {
      if (tty) process.stderr.write('\n');
    },
  };
};

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
  'audit verify': {
    help: 'audit verify --tenant <id>\n  Reads the whole history; checks every chain and digest. Exit 1 at the first broken link, naming it.',
    run: async (args, config, print) => {
      const { values } = parseArgs({ args, options: { tenant: { type: 'string' } } });
      const tenantId = requireTenant(values.tenant);
      await withStores(config, async (stores) => {
        await assertTenantExists(stores.eventStore, tenantId);
        const progress = progressLine('verified');
        const report = await verifyTenant(stores.eventStore, tenantId, progress.update);
        progress.done();
        const summary = `${report.events} events in ${report.streams} streams, ${report.digests} digests`;
        if (report.broken) {
          const { streamName, version, position, reason } = report.broken;
          print(
            `BROKEN after ${summary}: stream ${streamName}, version ${version}, position ${position}: ${reason}`,
            report,
          );
          throw new ExitError(1);
        }
        print(`OK: ${summary}; every chain and digest holds`, report);
      });
    },
  },
  'audit replay': {
    help: "audit replay --tenant <id> [--stream <name>] [--until <ISO time | position>]\n  Without --stream, prints the history up to --until; with it, the aggregate's state at that point.",
    run: async (args, config, print) => {
      const { values } = parseArgs({
        args,
        options: { tenant: { type: 'string' }, stream: { type: 'string' }, until: { type: 'string' } },
      });
      const tenantId = requireTenant(values.tenant);
      const until = values.until === undefined ? undefined : parseUntil(values.until, new Date());
      await withStores(config, async (stores) => {
        await assertTenantExists(stores.eventStore, tenantId);
        if (values.stream) {
          if (!values.stream.includes(`-${tenantId}_`))
            throw new UsageError(`Stream ${values.stream} is not one of tenant ${tenantId}`);
          const replayed = await stateAt(stores.eventStore, values.stream, until);
          if (!replayed) throw new UsageError(`No aggregate is stored in streams like ${values.stream}`);
          print(
            `${values.stream} at version ${replayed.version}:\n${JSON.stringify(replayed.state, null, 2)}`,
            { stream: values.stream, ...replayed },
          );
          return;
        }
        for await (const event of history(stores.eventStore, tenantId, until)) {
          print(
            `${event.position}  ${event.metadata.occurredAt}  ${event.streamName}@${event.streamVersion}  ${event.type}  ${event.metadata.actor}`,
            event,
          );
        }
      });
    },
  },
  'audit digest': {
    help: "audit digest --tenant <id>\n  Records a digest of the tenant's stream heads now (the service also does so on AUDIT_DIGEST_SCHEDULE).",
    run: async (args, config, print) => {
      const { values } = parseArgs({ args, options: { tenant: { type: 'string' } } });
      const tenantId = requireTenant(values.tenant);
      await withStores(config, async (stores) => {
        await assertTenantExists(stores.eventStore, tenantId);
        const runner = projectionRunner(streamHeadsProjection, {
          ...stores,
          logger: pino({ level: 'silent' }),
        });
        await runner.start();
        await runner.waitFor(await stores.eventStore.headPosition(), 60_000);
        await runner.stop();
        const digest = await recordDigest(stores.eventStore, stores.readModels, tenantId, new Date());
        print(
          digest
            ? `Digest of ${digest.streams} streams up to position ${digest.upToPosition}: ${digest.root}`
            : 'Nothing new since the last digest',
          digest,
        );
      });
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
    if (error instanceof ExitError) return error.code;
    const bad =
      error instanceof UntilError ||
      error instanceof UsageError ||
      error instanceof ValidationError ||
      error instanceof ConfigError;
    const message =
      error instanceof ValidationError
        ? error.errors.map((e) => `--${e.path}: ${e.message}`).join('\n')
        : String((error as Error).message);
    console.error(json ? JSON.stringify({ error: message }) : `error: ${message}`);
    return bad || (error as { code?: string }).code === 'ERR_PARSE_ARGS_UNKNOWN_OPTION' ? 2 : 1;
  }
};

process.exitCode = await main(process.argv.slice(2));
