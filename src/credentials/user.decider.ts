import { createHash } from 'node:crypto';
import type { Decider, DomainEvent } from '../core/decider.js';
import { ConflictError, NotFoundError } from '../core/errors.js';
import type { Scope } from '../core/scopes.js';

export interface User {
  id: string;
  tenantId: string;
  email: string;
  scopes: Scope[];
  status: 'active' | 'disabled';
  createdAt: string;
  disabledAt: string | null;
  version: number;
}

export type UserCreated = DomainEvent<
  'UserCreated',
  { userId: string; email: string; passwordHash: string; scopes: Scope[] }
>;
export type UserDisabled = DomainEvent<'UserDisabled', { userId: string }>;
export type UserEvent = UserCreated | UserDisabled;
export const userEventTypes: readonly UserEvent['type'][] = ['UserCreated', 'UserDisabled'];

export type UserState = { status: 'absent' } | { status: 'present'; user: User; passwordHash: string };

export type UserCommand =
  | { type: 'CreateUser'; userId: string; email: string; passwordHash: string; scopes: Scope[] }
  | { type: 'DisableUser' };

export const normalizeEmail = (email: string): string => email.trim().toLowerCase();

/**
 * A user's id is derived from the tenant and the e-mail, so creating a second user with the same e-mail
 * in a tenant is an append to an existing stream: refused by the event store itself, with no race.
 */
export const userIdFor = (tenantId: string, email: string): string =>
  `u_${createHash('sha256')
    .update(`${tenantId}\n${normalizeEmail(email)}`)
    .digest('hex')
    .slice(0, 26)}`;

export const userDecider: Decider<UserState, UserCommand, UserEvent> = {
  aggregate: 'user',
  initialState: () => ({ status: 'absent' }),
  decide: (command, state) => {
    switch (command.type) {
      case 'CreateUser': {
        if (state.status !== 'absent')
          throw new ConflictError('A user with this e-mail already exists in the tenant');
        const { userId, email, passwordHash, scopes } = command;
        return [{ type: 'UserCreated', data: { userId, email, passwordHash, scopes } }];
      }
      case 'DisableUser':
        if (state.status === 'absent') throw new NotFoundError('The user does not exist');
        return state.user.status === 'disabled'
          ? []
          : [{ type: 'UserDisabled', data: { userId: state.user.id } }];
    }
  },
  evolve: (state, event) => {
    switch (event.type) {
      case 'UserCreated':
        return {
          status: 'present',
          passwordHash: event.data.passwordHash,
          user: {
            id: event.data.userId,
            tenantId: event.metadata.tenantId,
            email: event.data.email,
            scopes: event.data.scopes,
            status: 'active',
            createdAt: event.metadata.occurredAt,
            disabledAt: null,
            version: event.streamVersion,
          },
        };
      case 'UserDisabled':
        if (state.status === 'absent') return state;
        return {
          ...state,
          user: {
            ...state.user,
            status: 'disabled',
            disabledAt: event.metadata.occurredAt,
            version: event.streamVersion,
          },
        };
    }
  },
};
