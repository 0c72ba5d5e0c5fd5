import Router from '@koa/router';
import type { Context } from 'koa';
import { handleCommand, readAggregate } from '../core/command-handler.js';
import { UnauthorizedError, ValidationError } from '../core/errors.js';
import { tenantIdPattern, type Clock, type IdGenerator } from '../core/ids.js';
import { streamName } from '../core/streams.js';
import { sessionDecider } from '../credentials/session.decider.js';
import type { User, UserState } from '../credentials/user.decider.js';
import { normalizeEmail, userDecider, userIdFor } from '../credentials/user.decider.js';
import type { EventStore } from '../eventstore/port.js';
import type { ReadModelStore } from '../readmodels/port.js';
import { platformPartition } from '../readmodels/aggregate-projection.js';
import { usersProjection } from '../../projections/users.js';
import { decodedJsonBody } from '../http/body.js';
import { commandContext } from '../http/command-context.js';

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
  readModels: ReadModelStore;
  keyring: () => Keyring;
  tokens: TokenSettings;
  refreshTokenTtlSeconds: number;
  revocations: Revocations;
  failures: { logins: FailureGuard<LoginAttempt> };
  clock: Clock;
  ids: IdGenerator;
}

const loginFailed = () => new UnauthorizedError('The e-mail or the password is wrong');

/**
 * A login without a tenant checks the password against every account of the e-mail, up to this many: one
 * scrypt each, all at once on libuv's four threads, so that an e-mail with accounts in several tenants
 * takes as long as one with a single account or none (docs/api.md#logging-in).
 */
export const maxAccountsPerLogin = 4;
const refreshRefused = () => new UnauthorizedError('The refresh token is not valid', 'invalid_token');

/** A tenant id that names no tenant: what a login without a tenant reads when the e-mail has no account. */
const noTenant = 't_none';

/**
 * User login and refresh. Login reads the user of the e-mail in the named tenant (or, without one, in
 * every tenant it has an account in), checks the password with scrypt, and starts a session: a
 * refresh-token family.
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

  /**
   * The accounts a login may be for: the named tenant's, or without a tenant those the users read model
   * lists for the e-mail across tenants, each read again from its stream (the read model has no password
   * hash). With none, one absent tenant's is read, so the work is the same.
   */
  const accountsOf = async (tenantId: string | undefined, email: string): Promise<UserState[]> => {
    if (tenantId !== undefined) return [await userOf(tenantId, email)];
    const listed = await deps.readModels.list<User>(usersProjection.collection.name, {
      tenantId: platformPartition,
      filters: [{ op: 'eq', field: 'email', value: email }],
      sort: { field: 'createdAt', direction: 'asc' },
      limit: maxAccountsPerLogin,
    });
    const tenants = listed.length > 0 ? listed.map((user) => user.tenantId) : [noTenant];
    return Promise.all(tenants.map((tenant) => userOf(tenant, email)));
  };

  router.post('/token', async (ctx) => {
    const body = await decodedJsonBody(ctx, LoginBody, 16 * 1024);
    const email = normalizeEmail(body.email);
    const attempt = { tenantId: body.tenantId ?? platformPartition, email, address: ctx.ip };
    await deps.failures.logins.begin(attempt);

    const accounts = await accountsOf(body.tenantId, email);
    // Unknown e-mail, unknown tenant, wrong password, disabled user: one answer, after one scrypt per
    // account (the decoy when there is none), run together, so neither the answer nor its timing tells which
    // e-mails exist, in this tenant or another.
    const decoy = await decoyHash();
    const verified = await Promise.all(
      accounts.map((account) =>
        verifyPassword(body.password, account.status === 'present' ? account.passwordHash : decoy),
      ),
    );
    const opened = accounts.filter(
      (account, index): account is Extract<UserState, { status: 'present' }> =>
        account.status === 'present' && verified[index] === true && account.user.status === 'active',
    );
    if (opened.length === 0) throw loginFailed();
    // Told only to whoever knows the password of several of the e-mail's accounts.
    if (opened.length > 1) {
      throw new ValidationError([
        {
          path: 'tenantId',
          message: 'is required: this e-mail and password open accounts in several tenants',
        },
      ]);
    }
    const state = opened[0]!;
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
    const body = await decodedJsonBody(ctx, RefreshBody, 16 * 1024);
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
    const body = await decodedJsonBody(ctx, RefreshBody, 16 * 1024);
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
