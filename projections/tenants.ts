import { aggregateProjection, platformPartition } from '../src/readmodels/aggregate-projection.js';
import type { Tenant, TenantState } from '../src/tenants/decider.js';
import { tenantDecider, tenantEventTypes } from '../src/tenants/decider.js';
import { textFields } from '../src/readmodels/fields.js';

/** Every tenant, for the platform administrator's list. */
export const tenantsProjection = aggregateProjection({
  name: 'tenants',
  collection: {
    name: 'tenants',
    fields: textFields('createdAt'),
    indexes: [['createdAt']],
  },
  decider: tenantDecider,
  eventTypes: tenantEventTypes,
  key: (event) => ({ tenantId: platformPartition, id: event.data.tenantId }),
  toState: (doc: Tenant | null): TenantState =>
    doc ? { status: 'active', tenant: doc } : { status: 'absent' },
  toDoc: (state) => (state.status === 'active' ? state.tenant : null),
});
