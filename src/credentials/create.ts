import { hashSecret, newSecret } from './secrets.js';
import type { Scope } from '../core/scopes.js';
import { handleCommand, type CommandContext } from '../core/command-handler.js';
import type { Decider, DomainEvent } from '../core/decider.js';
import { streamName } from '../core/streams.js';
import type { EventStore } from '../eventstore/port.js';
import type { CredentialCommand, CredentialState } from './secret-credential.decider.js';

/** Creates an API key or OAuth client with a new secret, which the caller shows once and forgets. */
export const createSecretCredential = async <E extends DomainEvent>(
  eventStore: EventStore,
  decider: Decider<CredentialState, CredentialCommand, E>,
  aggregate: string,
  context: CommandContext,
  { id, name, scopes }: { id: string; name: string; scopes: Scope[] },
) => {
  const secret = newSecret();
  const result = await handleCommand(
    eventStore,
    decider,
    streamName(aggregate, context.tenantId, id),
    { type: 'Create', id, name, scopes, secretHash: hashSecret(secret) },
    context,
  );
  if (result.state.status === 'absent') throw new Error('Create produced no credential');
  return { credential: result.state.credential, secret, result };
};
