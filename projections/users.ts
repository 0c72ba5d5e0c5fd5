import type { User, UserState } from '../src/credentials/user.decider.js';
import { userDecider, userEventTypes } from '../src/credentials/user.decider.js';
import { aggregateProjection, platformPartition } from '../src/readmodels/aggregate-projection.js';
import { textFields } from '../src/readmodels/fields.js';

/**
 * Users of every tenant, without their password hashes: listed per tenant, and found by e-mail at login.
 * Documents are folded without the hash, so it never reaches the read model.
 */
export const usersProjection = aggregateProjection({
  name: 'users',
  collection: {
    name: 'users',
    fields: textFields('tenantId', 'email', 'createdAt'),
    indexes: [['tenantId', 'createdAt'], ['email']],
  },
  decider: userDecider,
  eventTypes: userEventTypes,
  key: (event) => ({ tenantId: platformPartition, id: event.data.userId }),
  toState: (doc: User | null): UserState =>
    doc ? { status: 'present', user: doc, passwordHash: '' } : { status: 'absent' },
  toDoc: (state) => (state.status === 'present' ? state.user : null),
});
