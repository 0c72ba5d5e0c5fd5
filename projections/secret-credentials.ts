import type { CredentialState, SecretCredential } from '../src/credentials/secret-credential.decider.js';
import {
  apiKeyDecider,
  oauthClientDecider,
  secretCredentialDecider,
} from '../src/credentials/secret-credential.decider.js';
import { aggregateProjection, platformPartition } from '../src/readmodels/aggregate-projection.js';
import { textFields } from '../src/readmodels/fields.js';

/** API keys and OAuth clients, listed per tenant, without their secret hashes. */
const credentialsProjection = <C extends string, R extends string>(
  name: string,
  decider: ReturnType<typeof secretCredentialDecider<C, R>>,
) =>
  aggregateProjection({
    name,
    collection: {
      name,
      fields: textFields('tenantId', 'createdAt'),
      indexes: [['tenantId', 'createdAt']],
    },
    decider,
    eventTypes: [decider.eventTypes.created, decider.eventTypes.revoked],
    key: (event) => ({ tenantId: platformPartition, id: event.data.id }),
    toState: (doc: SecretCredential | null): CredentialState =>
      doc ? { status: 'present', credential: doc, secretHash: '' } : { status: 'absent' },
    toDoc: (state) => (state.status === 'present' ? state.credential : null),
  });

export const apiKeysProjection = credentialsProjection('api_keys', apiKeyDecider);
export const oauthClientsProjection = credentialsProjection('oauth_clients', oauthClientDecider);
