import { expect } from 'chai';
import { ConflictError, UnauthorizedError } from '../../src/core/errors.js';
import { sessionDecider, type SessionEvent } from '../../src/credentials/session.decider.js';
import { deciderSpec } from '../support/decider-spec.js';

describe('the session decider', () => {
  const given = deciderSpec(sessionDecider);
  const now = new Date('2026-01-01T12:00:00.000Z');
  const started: SessionEvent = {
    type: 'SessionStarted',
    data: { sessionId: 's_1', userId: 'u_1', refreshTokenHash: 'h1', expiresAt: '2026-01-02T00:00:00.000Z' },
  };
  const rotated: SessionEvent = {
    type: 'RefreshTokenRotated',
    data: { sessionId: 's_1', refreshTokenHash: 'h2', expiresAt: '2026-01-03T00:00:00.000Z' },
  };
  const refresh = (presentedHash: string, at = now) =>
    ({
      type: 'Refresh',
      presentedHash,
      nextHash: 'next',
      expiresAt: '2026-01-04T00:00:00.000Z',
      now: at,
    }) as const;

  it('starts a session once', () => {
    const start = {
      type: 'StartSession',
      sessionId: 's_1',
      userId: 'u_1',
      refreshTokenHash: 'h1',
      expiresAt: '2026-01-02T00:00:00.000Z',
    } as const;
    given([]).when(start).then([started]);
    given([started]).when(start).thenThrows(ConflictError);
  });

  it('rotates the current refresh token to the next one, with the new expiry', () => {
    given([started])
      .when(refresh('h1'))
      .then([
        {
          type: 'RefreshTokenRotated',
          data: { sessionId: 's_1', refreshTokenHash: 'next', expiresAt: '2026-01-04T00:00:00.000Z' },
        },
      ]);
    given([started, rotated])
      .when(refresh('h2'))
      .then([
        {
          type: 'RefreshTokenRotated',
          data: { sessionId: 's_1', refreshTokenHash: 'next', expiresAt: '2026-01-04T00:00:00.000Z' },
        },
      ]);
  });

  describe('when a refresh token that was already used is presented again', () => {
    it('revokes the whole family: someone else may hold the token', () => {
      given([started, rotated])
        .when(refresh('h1'))
        .then([
          {
            type: 'SessionRevoked',
            data: { sessionId: 's_1', userId: 'u_1', reason: 'a used refresh token was presented again' },
          },
        ]);
    });
  });

  it('refuses a token it never issued, as invalid_token, without revoking the session', () => {
    expect(() => sessionDecider.decide(refresh('forged'), given([started]).state))
      .to.throw(UnauthorizedError)
      .with.property('bearerError', 'invalid_token');
  });

  it('refuses the current token once it has expired, and at the instant it expires', () => {
    given([started])
      .when(refresh('h1', new Date('2026-01-02T00:00:00.000Z')))
      .thenThrows(UnauthorizedError);
    given([started])
      .when(refresh('h1', new Date('2026-01-01T23:59:59.999Z')))
      .then([
        {
          type: 'RefreshTokenRotated',
          data: { sessionId: 's_1', refreshTokenHash: 'next', expiresAt: '2026-01-04T00:00:00.000Z' },
        },
      ]);
  });

  it('refuses every refresh of a revoked session, even with its last current token', () => {
    const revoked: SessionEvent = {
      type: 'SessionRevoked',
      data: { sessionId: 's_1', userId: 'u_1', reason: 'a used refresh token was presented again' },
    };
    given([started, rotated, revoked]).when(refresh('h2')).thenThrows(UnauthorizedError);
    given([started, rotated, revoked]).when(refresh('h1')).thenThrows(UnauthorizedError);
  });

  it('refuses a refresh of a session that does not exist', () => {
    given([]).when(refresh('h1')).thenThrows(UnauthorizedError);
  });

  it('folds the rotations into the current hash and the hashes already used', () => {
    expect(given([started, rotated]).state).to.deep.equal({
      status: 'active',
      sessionId: 's_1',
      userId: 'u_1',
      currentHash: 'h2',
      usedHashes: ['h1'],
      expiresAt: '2026-01-03T00:00:00.000Z',
    });
  });

  describe('signing out', () => {
    const signOut = (presentedHash: string) => ({ type: 'SignOut', presentedHash }) as const;
    const signedOut: SessionEvent = {
      type: 'SessionRevoked',
      data: { sessionId: 's_1', userId: 'u_1', reason: 'signed out' },
    };

    it('ends the session with its current token, or with one of its used ones', () => {
      given([started, rotated]).when(signOut('h2')).then([signedOut]);
      given([started, rotated]).when(signOut('h1')).then([signedOut]);
    });

    it('does nothing with another token, for a session that is absent, or one that has ended', () => {
      given([started, rotated]).when(signOut('someone else’s')).then([]);
      given([]).when(signOut('h1')).then([]);
      given([started, signedOut]).when(signOut('h1')).then([]);
    });
  });
});
