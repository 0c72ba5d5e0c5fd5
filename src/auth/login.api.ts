import Router from '@koa/router';
import type { Context } from 'koa';
import { handleCommand, readAggregate } from '../core/command-handler.js';
import { UnauthorizedError } from '../core/errors.js';
import { tenantIdPattern, type Clock, type IdGenerator } from '../core/ids.js';
import { streamName } from '../core/streams.js';
import { sessionDecider } from '../credentials/session.decider.js';
import type { User, UserState } from '../credentials/user.decider.js';
import { normalizeEmail, userDecider, userIdFor } from '../credentials/user.decider.js';
import type { EventStore } from '../eventstore/port.js';
import { readJsonBody } from '../http/body.js';
import { commandContext } from '../http/command-context.js';
import { decodeOrThrow } from '../http/codec.js';
import { LoginBody, RefreshBody } from './codecs.js';
import { retryOnConflict } from '../core/conflicts.js';
import { formatCredential, parseCredential, refreshTokenPrefix } from '../credentials/credential-strings.js';
import { decoyHash, verifyPassword } from '../credentials/passwords.js';
import type { FailureGuard, LoginAttempt } from './rate-limit.js';
import type { Revocations } from './revocations.js';
import { hashSecret, newSecret } from '../credentials/secrets.js';
import type { Keyring } from './signing-keys.js';
import type { TokenSettings } from './tokens.js';
import { signAccessToken } from './tokens.js';

export interface LoginApiDeps {
  eventStore: EventStore;
  keyring: () => Keyring;
  tokens: TokenSettings;
  refreshTokenTtlSeconds: number;
  revocations: Revocations;
  failures: { logins: FailureGuard<LoginAttempt> };
  clock: Clock;
  ids: IdGenerator;
}

const loginFailed = () => new UnauthorizedError('The e-mail or the password is wrong');
const refreshRefused = () => new UnauthorizedError('The refresh token is not valid', 'invalid_token');

/**
 * User login and refresh. Login reads the user of the named tenant and e-mail, checks the password with
 * scrypt, and starts a session: a refresh-token family.
 */
export const loginApi = (deps: LoginApiDeps): Router => {
  const router = new Router({ prefix: '/v1/auth' });

  const issue = (ctx: Context, user: User, sessionId: string, secret: string) => {
    const now = deps.clock();
    ctx.set('Cache-Control', 'no-store');
    ctx.body = {
      accessToken: signAccessToken(
        deps.keyring(),
        deps.tokens,
        { sub: `user:${user.id}`, tenantId: user.tenantId, scopes: user.scopes, sid: sessionId },
        now,
      ).token,
      refreshToken: formatCredential(refreshTokenPrefix, { tenantId: user.tenantId, id: sessionId, secret }),
      tokenType: 'Bearer',
      expiresIn: deps.tokens.accessTokenTtlSeconds,
    };
  };

  const expiry = () => new Date(deps.clock().getTime() + deps.refreshTokenTtlSeconds * 1000).toISOString();

  const userOf = async (tenantId: string, email: string): Promise<UserState> =>
    tenantIdPattern.test(tenantId)
      ? (
          await readAggregate(
            deps.eventStore,
            userDecider,
            streamName('user', tenantId, userIdFor(tenantId, email)),
          )
        ).state
      : { status: 'absent' };

  router.post('/token', async (ctx) => {
    const body = decodeOrThrow(LoginBody, await readJsonBody(ctx, { limit: 16 * 1024 }));
    const attempt = { tenantId: body.tenantId, email: normalizeEmail(body.email), address: ctx.ip };
    await deps.failures.logins.begin(attempt);

    const state = await userOf(attempt.tenantId, attempt.email);
    // Unknown e-mail, unknown tenant, wrong password, disabled user: one answer, after one scrypt each (the
    // decoy when there is no user), so neither the answer nor its timing tells which e-mails exist.
    const matches = await verifyPassword(
      body.password,
      state.status === 'present' ? state.passwordHash : await decoyHash(),
    );
    if (state.status !== 'present' || !matches || state.user.status !== 'active') {
      throw loginFailed();
    }
    await deps.failures.logins.succeeded(attempt);

    const sessionId = deps.ids('s');
    const secret = newSecret();
    await handleCommand(
      deps.eventStore,
      sessionDecider,
      streamName('session', state.user.tenantId, sessionId),
      {
        type: 'StartSession',
        sessionId,
        userId: state.user.id,
        refreshTokenHash: hashSecret(secret),
        expiresAt: expiry(),
      },
      commandContext(ctx, deps, state.user.tenantId, `user:${state.user.id}`),
    );
    issue(ctx, state.user, sessionId, secret);
  });

  router.post('/refresh', async (ctx) => {
    const body = decodeOrThrow(RefreshBody, await readJsonBody(ctx, { limit: 16 * 1024 }));
    const presented = parseCredential(refreshTokenPrefix, body.refreshToken);
    if (!presented) throw refreshRefused();
    const stream = streamName('session', presented.tenantId, presented.id);
    const session = await readAggregate(deps.eventStore, sessionDecider, stream);
    if (session.state.status === 'absent') throw refreshRefused();
    const { userId } = session.state;
    // The user is checked before the session is touched: a refused refresh changes nothing. (A revoked
    // session is refused by the decider, also without an event.)
    const user = await readAggregate(
      deps.eventStore,
      userDecider,
      streamName('user', presented.tenantId, userId),
    );
    if (
      user.state.status !== 'present' ||
      user.state.user.status !== 'active' ||
      deps.revocations.isRevoked([userId, presented.id])
    ) {
      throw refreshRefused();
    }

    const secret = newSecret();
    // A refresh that loses a race with another refresh of the same token is decided again: the token is
    // then a used one, and the family is revoked, as for any replay (not a 409 the client might retry).
    const result = await retryOnConflict(() =>
      handleCommand(
        deps.eventStore,
        sessionDecider,
        stream,
        {
          type: 'Refresh',
          presentedHash: hashSecret(presented.secret),
          nextHash: hashSecret(secret),
          expiresAt: expiry(),
          now: deps.clock(),
        },
        commandContext(ctx, deps, presented.tenantId, `user:${userId}`),
      ),
    );
    if (result.events.some((event) => event.type === 'SessionRevoked')) {
      throw new UnauthorizedError(
        'The refresh token was already used; the session is revoked',
        'invalid_token',
      );
    }
    issue(ctx, user.state.user, presented.id, secret);
  });

  /**
   * Sign-out: the refresh token's session ends (SessionRevoked), and with it its access tokens. As RFC 7009
   * §2.2 has it for revocation, a token that ends nothing (unknown, spent by an ended session, malformed)
   * answers the same 204: the caller can do nothing about it, and the answer tells nobody which tokens exist.
   */
  router.post('/logout', async (ctx) => {
    const body = decodeOrThrow(RefreshBody, await readJsonBody(ctx, { limit: 16 * 1024 }));
    const presented = parseCredential(refreshTokenPrefix, body.refreshToken);
    ctx.set('Cache-Control', 'no-store');
    ctx.status = 204;
    if (!presented) return;
    const stream = streamName('session', presented.tenantId, presented.id);
    const session = await readAggregate(deps.eventStore, sessionDecider, stream);
    if (session.state.status !== 'active') return;
    const command = { type: 'SignOut', presentedHash: hashSecret(presented.secret) } as const;
    const actor = `user:${session.state.userId}`;
    await retryOnConflict(() =>
      handleCommand(
        deps.eventStore,
        sessionDecider,
        stream,
        command,
        commandContext(ctx, deps, presented.tenantId, actor),
      ),
    );
  });

  return router;
};
