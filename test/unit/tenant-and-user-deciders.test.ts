import { expect } from 'chai';
import { ConflictError, NotFoundError } from '../../src/core/errors.js';
import { userDecider, userIdFor, type UserEvent } from '../../src/credentials/user.decider.js';
import { tenantDecider, type TenantEvent } from '../../src/tenants/decider.js';
import { deciderSpec } from '../support/decider-spec.js';

describe('the tenant decider', () => {
  const given = deciderSpec(tenantDecider);
  const command = {
    type: 'CreateTenant',
    tenantId: 't_acme',
    name: 'Acme',
    notificationEmail: 'ops@acme.test',
  } as const;
  const created: TenantEvent = {
    type: 'TenantCreated',
    data: { tenantId: 't_acme', name: 'Acme', notificationEmail: 'ops@acme.test' },
  };

  it('creates a tenant once', () => {
    given([]).when(command).then([created]);
    given([created]).when(command).thenThrows(ConflictError);
  });

  it('folds to the tenant with its creation time and version', () => {
    expect(given([created]).state).to.deep.equal({
      status: 'active',
      tenant: {
        id: 't_acme',
        name: 'Acme',
        notificationEmail: 'ops@acme.test',
        createdAt: '2026-01-01T00:00:00.000Z',
        version: 0,
      },
    });
  });
});

describe('the user decider', () => {
  const given = deciderSpec(userDecider);
  const userId = userIdFor('t_acme', 'ana@acme.test');
  const created: UserEvent = {
    type: 'UserCreated',
    data: { userId, email: 'ana@acme.test', passwordHash: 'scrypt$…', scopes: ['observations:read'] },
  };
  const disabled: UserEvent = { type: 'UserDisabled', data: { userId } };

  it('creates a user once per e-mail in a tenant: the id comes from the tenant and the normalized e-mail', () => {
    expect(userIdFor('t_acme', '  Ana@ACME.test ')).to.equal(userId);
    expect(userIdFor('t_other', 'ana@acme.test')).to.not.equal(userId);
    given([])
      .when({
        type: 'CreateUser',
        userId,
        email: 'ana@acme.test',
        passwordHash: 'scrypt$…',
        scopes: ['observations:read'],
      })
      .then([created]);
    given([created])
      .when({ type: 'CreateUser', userId, email: 'ana@acme.test', passwordHash: 'x', scopes: [] })
      .thenThrows(ConflictError);
  });

  it('disables a user once, and says so for a user that does not exist', () => {
    given([created]).when({ type: 'DisableUser' }).then([disabled]);
    given([created, disabled]).when({ type: 'DisableUser' }).then([]);
    given([]).when({ type: 'DisableUser' }).thenThrows(NotFoundError);
  });

  it('folds to a disabled user with the time it was disabled', () => {
    const { state } = given([created, disabled]);
    expect(state.status === 'present' && state.user).to.include({
      status: 'disabled',
      disabledAt: '2026-01-01T00:00:01.000Z',
      version: 1,
    });
  });
});
