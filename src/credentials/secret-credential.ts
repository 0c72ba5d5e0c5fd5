import type { Decider, DomainEvent } from '../core/decider.js';
import { ConflictError, NotFoundError } from '../core/errors.js';
import type { Scope } from '../auth/scopes.js';

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
  | { type: 'Create'; id: string; name: string; scopes: Scope[]; secretHash: string }
  | { type: 'Revoke' }
  | { type: 'RecordTokenIssued'; jti: string; scopes: Scope[]; expiresAt: string };

export interface CredentialEventNames<Created extends string, Revoked extends string, Issued extends string> {
  aggregate: string;
  created: Created;
  revoked: Revoked;
  /** Tokens issued to the credential, for the audit trail; only OAuth clients have them. */
  tokenIssued: Issued;
}

type CreatedData = { id: string; name: string; scopes: Scope[]; secretHash: string };
type IdData = { id: string };
type IssuedData = { id: string; jti: string; scopes: Scope[]; expiresAt: string };

export type CredentialEvent<C extends string, R extends string, I extends string> =
  DomainEvent<C, CreatedData> | DomainEvent<R, IdData> | DomainEvent<I, IssuedData>;

export const secretCredentialDecider = <C extends string, R extends string, I extends string>(
  names: CredentialEventNames<C, R, I>,
): Decider<CredentialState, CredentialCommand, CredentialEvent<C, R, I>> & {
  eventTypes: CredentialEventNames<C, R, I>;
} => ({
  aggregate: names.aggregate,
  eventTypes: names,
  initialState: () => ({ status: 'absent' }),
  decide: (command, state): CredentialEvent<C, R, I>[] => {
    if (command.type === 'Create') {
      if (state.status !== 'absent') throw new ConflictError('The credential already exists');
      const { id, name, scopes, secretHash } = command;
      return [{ type: names.created, data: { id, name, scopes, secretHash } }];
    }
    if (state.status === 'absent') throw new NotFoundError('The credential does not exist');
    if (command.type === 'Revoke') {
      return state.credential.status === 'revoked'
        ? []
        : [{ type: names.revoked, data: { id: state.credential.id } }];
    }
    const { jti, scopes, expiresAt } = command;
    return [{ type: names.tokenIssued, data: { id: state.credential.id, jti, scopes, expiresAt } }];
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
    const revoked =
      event.type === names.revoked
        ? { status: 'revoked' as const, revokedAt: event.metadata.occurredAt }
        : {};
    return { ...state, credential: { ...state.credential, ...revoked, version: event.streamVersion } };
  },
});

export const apiKeyDecider = secretCredentialDecider({
  aggregate: 'apikey',
  created: 'ApiKeyCreated',
  revoked: 'ApiKeyRevoked',
  tokenIssued: 'ApiKeyTokenIssued',
});

export const oauthClientDecider = secretCredentialDecider({
  aggregate: 'oauthclient',
  created: 'OAuthClientRegistered',
  revoked: 'OAuthClientRevoked',
  tokenIssued: 'OAuthTokenIssued',
});
