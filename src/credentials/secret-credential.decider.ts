import type { Decider, DomainEvent } from '../core/decider.js';
import { ConflictError, NotFoundError } from '../core/errors.js';
import type { Scope } from '../core/scopes.js';

/**
 * API keys and OAuth clients share one life cycle: created with a name, scopes and the hash of a secret
 * shown once; revoked for good. Each kind keeps its own event names, so the history reads plainly.
 */
export interface SecretCredential {
  id: string;
  tenantId: string;
  name: string;
  scopes: Scope[];
  status: 'active' | 'revoked';
  createdAt: string;
  revokedAt: string | null;
  version: number;
}

export type CredentialState =
  { status: 'absent' } | { status: 'present'; credential: SecretCredential; secretHash: string };

export type CredentialCommand =
  { type: 'Create'; id: string; name: string; scopes: Scope[]; secretHash: string } | { type: 'Revoke' };

export interface CredentialEventNames<Created extends string, Revoked extends string> {
  aggregate: string;
  created: Created;
  revoked: Revoked;
}

type CreatedData = { id: string; name: string; scopes: Scope[]; secretHash: string };
type RevokedData = { id: string };

export type CredentialEvent<C extends string, R extends string> =
  DomainEvent<C, CreatedData> | DomainEvent<R, RevokedData>;

export const secretCredentialDecider = <C extends string, R extends string>(
  names: CredentialEventNames<C, R>,
): Decider<CredentialState, CredentialCommand, CredentialEvent<C, R>> & {
  eventTypes: CredentialEventNames<C, R>;
} => ({
  aggregate: names.aggregate,
  eventTypes: names,
  initialState: () => ({ status: 'absent' }),
  decide: (command, state): CredentialEvent<C, R>[] => {
    if (command.type === 'Create') {
      if (state.status !== 'absent') throw new ConflictError('The credential already exists');
      const { id, name, scopes, secretHash } = command;
      return [{ type: names.created, data: { id, name, scopes, secretHash } }];
    }
    if (state.status === 'absent') throw new NotFoundError('The credential does not exist');
    return state.credential.status === 'revoked'
      ? []
      : [{ type: names.revoked, data: { id: state.credential.id } }];
  },
  evolve: (state, event) => {
    if (event.type === names.created) {
      const data = event.data as CreatedData;
      return {
        status: 'present',
        secretHash: data.secretHash,
        credential: {
          id: data.id,
          tenantId: event.metadata.tenantId,
          name: data.name,
          scopes: data.scopes,
          status: 'active',
          createdAt: event.metadata.occurredAt,
          revokedAt: null,
          version: event.streamVersion,
        },
      };
    }
    if (state.status === 'absent') return state;
    return {
      ...state,
      credential: {
        ...state.credential,
        status: 'revoked',
        revokedAt: event.metadata.occurredAt,
        version: event.streamVersion,
      },
    };
  },
});

export const apiKeyDecider = secretCredentialDecider({
  aggregate: 'apikey',
  created: 'ApiKeyCreated',
  revoked: 'ApiKeyRevoked',
});

export const oauthClientDecider = secretCredentialDecider({
  aggregate: 'oauthclient',
  created: 'OAuthClientRegistered',
  revoked: 'OAuthClientRevoked',
});
