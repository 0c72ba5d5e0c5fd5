import { pino } from 'pino';
import type { Config } from '../config.js';
import { readAggregate } from '../core/command-handler.js';
import type { EventStore } from '../eventstore/port.js';
import type { Projection } from '../readmodels/projection.js';
import { projectionRunner } from '../readmodels/runner.js';
import { openStores, type Stores } from '../stores.js';
import { tenantStream } from '../tenants/load.js';
import { tenantDecider } from '../tenants/decider.js';
import { UsageError } from './command.js';

/** Opens the configured stores for one piece of work, and closes them after it, whatever happens. */
export const withStores = async <T>(config: Config, work: (stores: Stores) => Promise<T>): Promise<T> => {
  const stores = await openStores(config);
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
