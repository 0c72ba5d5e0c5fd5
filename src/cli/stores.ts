import { existsSync, mkdirSync } from 'node:fs';
import { resolve } from 'node:path';
import { pino } from 'pino';
import type { Config } from '../config.js';
import { readAggregate } from '../core/command-handler.js';
import type { EventStore } from '../eventstore/port.js';
import type { Projection } from '../readmodels/projection.js';
import { projectionRunner } from '../readmodels/runner.js';
import { eventSchemas } from '../domains.js';
import { openStores, type Stores } from '../stores.js';
import { tenantStream } from '../tenants/load.js';
import { tenantDecider } from '../tenants/decider.js';
import { flags, requireTenant } from './args.js';
import { UsageError, type Context } from './command.js';

type StoreConfig = Pick<Config, 'dataDir' | 'eventStoreUrl' | 'mongodbUrl' | 'databaseUrl'>;

/** A server's URL as the operator may see it: without user name and password. */
export const withoutCredentials = (url: string): string => {
  try {
    const parsed = new URL(url);
    parsed.username = '';
    parsed.password = '';
    return parsed.href;
  } catch {
    // Not a URL that Node parses (EventStoreDB's lists of hosts): cut whatever stands before an @.
    return url.replace(/\/\/[^/@]*@/, '//');
  }
};

/** Where the events, and where the read models (with blobs and idempotency records), are kept. */
const locations = (config: StoreConfig) => {
  const embedded = `sqlite:${resolve(config.dataDir)}`;
  const server = (url: string | null) => (url ? withoutCredentials(url) : undefined);
  return {
    events: server(config.eventStoreUrl) ?? server(config.databaseUrl) ?? embedded,
    readModels: server(config.mongodbUrl) ?? server(config.databaseUrl) ?? embedded,
    embedded,
  };
};

/** The line every store-opening command prints on stderr: `obs: store sqlite:/srv/data`. */
export const storeLine = (config: StoreConfig): string => {
  const { events, readModels } = locations(config);
  return events === readModels
    ? `obs: store ${events}`
    : `obs: store ${events} (events), ${readModels} (read models, blobs)`;
};

/**
 * A DATA_DIR that does not exist is most often the wrong working directory or a typo: refused (exit code
 * 2) rather than started empty beside the real one, unless `--create` asks for a new one.
 */
export const requireDataDir = (dataDir: string, create: boolean) => {
  if (existsSync(dataDir)) return;
  if (!create) {
    throw new UsageError(
      `DATA_DIR ${resolve(dataDir)} does not exist; run obs where the service runs (DATA_DIR is relative to the working directory), set DATA_DIR, or add --create to start a new one`,
    );
  }
  mkdirSync(dataDir, { recursive: true });
};

/**
 * Opens the configured stores for one piece of work, and closes them after it, whatever happens. Says
 * which stores on stderr first, so that an empty answer from the wrong ones is not taken for the truth.
 */
export const withStores = async <T>(
  { config, create }: Pick<Context, 'config' | 'create'>,
  work: (stores: Stores) => Promise<T>,
): Promise<T> => {
  const { events, readModels, embedded } = locations(config);
  if (events === embedded || readModels === embedded) requireDataDir(config.dataDir, create);
  process.stderr.write(`${storeLine(config)}\n`);
  const stores = await openStores(config, { eventSchemas });
  try {
    return await work(stores);
  } finally {
    await stores.close();
  }
};

export const assertTenantExists = async (eventStore: EventStore, tenantId: string) => {
  const { state } = await readAggregate(eventStore, tenantDecider, tenantStream(tenantId));
  if (state.status === 'absent') throw new UsageError(`Tenant ${tenantId} does not exist`);
};

/** Offline there is no running projection: catch the read model up to the newest event before reading it. */
export const catchUp = async <D>(projection: Projection<D>, stores: Stores, timeoutMs: number) => {
  const runner = projectionRunner(projection, { ...stores, logger: pino({ level: 'silent' }) });
  await runner.start();
  await runner.waitFor(await stores.eventStore.headPosition(), timeoutMs);
  await runner.stop();
};

/** A command on one tenant that takes nothing but `--tenant <id>`: the tenant must exist in the stores opened. */
export const withTenantStores = async <T>(
  args: string[],
  context: Pick<Context, 'config' | 'create'>,
  work: (stores: Stores, tenantId: string) => Promise<T>,
): Promise<T> => {
  const { values } = flags(args, { options: { tenant: { type: 'string' } } });
  const tenantId = requireTenant(values.tenant);
  return withStores(context, async (stores) => {
    await assertTenantExists(stores.eventStore, tenantId);
    return work(stores, tenantId);
  });
};
