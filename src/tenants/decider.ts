import type { Decider, DomainEvent } from '../core/decider.js';
import { ConflictError } from '../core/errors.js';

export interface Tenant {
  id: string;
  name: string;
  notificationEmail: string;
  createdAt: string;
  version: number;
}

export type TenantCreated = DomainEvent<
  'TenantCreated',
  { tenantId: string; name: string; notificationEmail: string }
>;
export type TenantEvent = TenantCreated;
export type TenantState = { status: 'absent' } | { status: 'active'; tenant: Tenant };
export type TenantCommand = {
  type: 'CreateTenant';
  tenantId: string;
  name: string;
  notificationEmail: string;
};

export const tenantEventTypes: readonly TenantEvent['type'][] = ['TenantCreated'];

/** A tenant's stream is `tenant-<tenantId>_<tenantId>`: it is its own tenant. */
export const tenantDecider: Decider<TenantState, TenantCommand, TenantEvent> = {
  aggregate: 'tenant',
  initialState: () => ({ status: 'absent' }),
  decide: (command, state) => {
    if (state.status !== 'absent') throw new ConflictError(`Tenant ${command.tenantId} already exists`);
    const { tenantId, name, notificationEmail } = command;
    return [{ type: 'TenantCreated', data: { tenantId, name, notificationEmail } }];
  },
  evolve: (_state, event) => ({
    status: 'active',
    tenant: {
      id: event.data.tenantId,
      name: event.data.name,
      notificationEmail: event.data.notificationEmail,
      createdAt: event.metadata.occurredAt,
      version: event.streamVersion,
    },
  }),
};
