import { expect } from 'chai';
import { ConflictError, NotFoundError } from '../../src/core/errors.js';
import type { Decider } from '../../src/core/decider.js';
import {
  apiKeyDecider,
  oauthClientDecider,
  type CredentialCommand,
  type CredentialEvent,
  type CredentialState,
} from '../../src/credentials/secret-credential.decider.js';
import { deciderSpec } from '../support/decider-spec.js';

// API keys and OAuth clients share one decider; each kind keeps its own event names, so both run the
// same cases with the names spelled out here, and a mix-up (an API key recorded as an OAuth client) fails.
const secretCredentialCases = <C extends string, R extends string>(
  label: string,
  decider: Decider<CredentialState, CredentialCommand, CredentialEvent<C, R>>,
  createdType: C,
  revokedType: R,
) =>
  describe(`the ${label} decider`, () => {
    const given = deciderSpec(decider);
    const create: CredentialCommand = {
      type: 'Create',
      id: 'cred_1',
      name: 'ingest',
      scopes: ['observations:read', 'observations:write'],
      secretHash: 'sha256$abc',
    };
    const created: CredentialEvent<C, R> = {
      type: createdType,
      data: {
        id: 'cred_1',
        name: 'ingest',
        scopes: ['observations:read', 'observations:write'],
        secretHash: 'sha256$abc',
      },
    };
    const revoked: CredentialEvent<C, R> = { type: revokedType, data: { id: 'cred_1' } };

    it(`records ${createdType} with the name, scopes and secret hash, once`, () => {
      given([]).when(create).then([created]);
      given([created]).when(create).thenThrows(ConflictError);
    });

    it('refuses to create a revoked credential again: its id stays used', () => {
      given([created, revoked]).when(create).thenThrows(ConflictError);
    });

    it(`revokes once: ${revokedType} first, nothing the second time`, () => {
      given([created]).when({ type: 'Revoke' }).then([revoked]);
      given([created, revoked]).when({ type: 'Revoke' }).then([]);
    });

    it('says a credential that does not exist cannot be revoked', () => {
      given([]).when({ type: 'Revoke' }).thenThrows(NotFoundError);
    });

    it('folds to an active credential in its tenant, keeping the secret hash out of the credential', () => {
      expect(given([created]).state).to.deep.equal({
        status: 'present',
        secretHash: 'sha256$abc',
        credential: {
          id: 'cred_1',
          tenantId: 't_test',
          name: 'ingest',
          scopes: ['observations:read', 'observations:write'],
          status: 'active',
          createdAt: '2026-01-01T00:00:00.000Z',
          revokedAt: null,
          version: 0,
        },
      });
    });

    it('folds to a revoked credential with the time it was revoked and its new version', () => {
      const { state } = given([created, revoked]);
      expect(state.status === 'present' && state.credential).to.include({
        status: 'revoked',
        createdAt: '2026-01-01T00:00:00.000Z',
        revokedAt: '2026-01-01T00:00:01.000Z',
        version: 1,
      });
    });
  });

secretCredentialCases('API key', apiKeyDecider, 'ApiKeyCreated', 'ApiKeyRevoked');
secretCredentialCases('OAuth client', oauthClientDecider, 'OAuthClientRegistered', 'OAuthClientRevoked');

describe('the API key and OAuth client deciders', () => {
  it('keep separate aggregates, so their streams never mix', () => {
    expect(apiKeyDecider.aggregate).to.equal('apikey');
    expect(oauthClientDecider.aggregate).to.equal('oauthclient');
  });
});
