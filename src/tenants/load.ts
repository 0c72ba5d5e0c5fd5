import { readAggregate } from '../core/command-handler.js';
import { NotFoundError } from '../core/errors.js';
import { streamName } from '../core/streams.js';
import type { EventStore } from '../eventstore/port.js';
import type { Tenant } from './decider.js';
import { tenantDecider } from './decider.js';

export const tenantStream = (tenantId: string) => streamName('tenant', tenantId, tenantId);

/** The tenant, or 404: used by every route that must not act for a tenant that does not exist. */
export const loadTenant = async (eventStore: EventStore, tenantId: string): Promise<Tenant> => {
  const { state } = await readAggregate(eventStore, tenantDecider, tenantStream(tenantId));
  if (state.status === 'absent') throw new NotFoundError('No such tenant');
  return state.tenant;
};
