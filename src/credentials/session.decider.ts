import type { Decider, DomainEvent } from '../core/decider.js';
import { ConflictError, UnauthorizedError } from '../core/errors.js';

/**
 * A login session is one refresh-token family (RFC 9700 §4.14.2). Refresh tokens are single use: each
 * refresh rotates the family's current hash, and presenting an older one revokes the whole family.
 * The expected-version append makes "single use" hold even for two refreshes racing each other.
 */
export type SessionStarted = DomainEvent<
  'SessionStarted',
  { sessionId: string; userId: string; refreshTokenHash: string; expiresAt: string }
>;
export type RefreshTokenRotated = DomainEvent<
  'RefreshTokenRotated',
  { sessionId: string; refreshTokenHash: string; expiresAt: string }
>;
export type SessionRevoked = DomainEvent<
  'SessionRevoked',
  { sessionId: string; userId: string; reason: string }
>;
export type SessionEvent = SessionStarted | RefreshTokenRotated | SessionRevoked;

export type SessionState =
  | { status: 'absent' }
  | {
      status: 'active' | 'revoked';
      sessionId: string;
      userId: string;
      currentHash: string;
      usedHashes: string[];
      expiresAt: string;
    };

export type SessionCommand =
  | { type: 'StartSession'; sessionId: string; userId: string; refreshTokenHash: string; expiresAt: string }
  | { type: 'Refresh'; presentedHash: string; nextHash: string; expiresAt: string; now: Date }
  /** Sign-out: the session ends if the token presented is one of its own; otherwise nothing happens. */
  | { type: 'SignOut'; presentedHash: string };

const refused = () => new UnauthorizedError('The refresh token is not valid', 'invalid_token');

export const sessionDecider: Decider<SessionState, SessionCommand, SessionEvent> = {
  aggregate: 'session',
  initialState: () => ({ status: 'absent' }),
  decide: (command, state) => {
    if (command.type === 'StartSession') {
      if (state.status !== 'absent') throw new ConflictError('The session already exists');
      const { sessionId, userId, refreshTokenHash, expiresAt } = command;
      return [{ type: 'SessionStarted', data: { sessionId, userId, refreshTokenHash, expiresAt } }];
    }
    if (command.type === 'SignOut') {
      // Holding the session's current token, or a used one (which a refresh would revoke it for), is what
      // ends it; an ended session, or another session's token, leaves everything as it is.
      const ours =
        state.status === 'active' && [state.currentHash, ...state.usedHashes].includes(command.presentedHash);
      if (!ours) return [];
      const { sessionId, userId } = state;
      return [{ type: 'SessionRevoked', data: { sessionId, userId, reason: 'signed out' } }];
    }
    if (state.status !== 'active') throw refused();
    if (state.usedHashes.includes(command.presentedHash)) {
      const { sessionId, userId } = state;
      return [
        {
          type: 'SessionRevoked',
          data: { sessionId, userId, reason: 'a used refresh token was presented again' },
        },
      ];
    }
    if (state.currentHash !== command.presentedHash || Date.parse(state.expiresAt) <= command.now.getTime()) {
      throw refused();
    }
    const { sessionId } = state;
    return [
      {
        type: 'RefreshTokenRotated',
        data: { sessionId, refreshTokenHash: command.nextHash, expiresAt: command.expiresAt },
      },
    ];
  },
  evolve: (state, event) => {
    switch (event.type) {
      case 'SessionStarted':
        return {
          status: 'active',
          sessionId: event.data.sessionId,
          userId: event.data.userId,
          currentHash: event.data.refreshTokenHash,
          usedHashes: [],
          expiresAt: event.data.expiresAt,
        };
      case 'RefreshTokenRotated':
        if (state.status === 'absent') return state;
        return {
          ...state,
          currentHash: event.data.refreshTokenHash,
          usedHashes: [...state.usedHashes, state.currentHash],
          expiresAt: event.data.expiresAt,
        };
      case 'SessionRevoked':
        return state.status === 'absent' ? state : { ...state, status: 'revoked' };
    }
  },
};
