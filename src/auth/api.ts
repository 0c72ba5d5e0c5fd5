import Router from '@koa/router';
import type { Context } from 'koa';
import { usersProjection } from '../../projections/users.js';
import { handleCommand, readAggregate } from '../core/command-handler.js';
import { TooManyRequestsError, UnauthorizedError, ValidationError } from '../core/errors.js';
import type { Clock, IdGenerator } from '../core/ids.js';
import { streamName } from '../core/streams.js';
import { Email } from '../credentials/codecs.js';
import { sessionDecider } from '../credentials/session.js';
import type { User } from '../credentials/user.js';
import { normalizeEmail, userDecider, userIdFor } from '../credentials/user.js';
import type { EventStore } from '../eventstore/port.js';
import { readJsonBody } from '../http/body.js';
import { commandContext } from '../http/command-context.js';
import type { ProjectionRunner } from '../readmodels/runner.js';
import { boundedString, decodeOrThrow, strictObject } from '../http/codec.js';
import { platformPartition } from '../readmodels/aggregate-projection.js';
import type { ReadModelStore } from '../readmodels/port.js';
import { retryOnConflict } from './conflicts.js';
import { formatCredential, parseCredential, refreshTokenPrefix } from './credential-strings.js';
import { decoyHash, verifyPassword } from './passwords.js';
import type { FailureLimiter } from './rate-limit.js';
import type { Revocations } from './revocations.js';
import { hashSecret, newSecret } from './secrets.js';
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
  failures: { byEmail: FailureLimiter; byAddress: FailureLimiter };
  clock: Clock;
  ids: IdGenerator;
  /** The users projection, which login reads to find the tenant of an e-mail. */
  users: ProjectionRunner;
}

export const LoginBody = strictObject(
  'a login',
  { email: Email, password: boundedString(1, 1024) },
  { tenantId: boundedString(1, 64) },
);
// As long as any credential authenticate.ts reads: a too-long or wrong-kind token (an access token sent
// here) is then refused as invalid with 401, like any other bad refresh token, not as a malformed body.
export const RefreshBody = strictObject('a refresh request', { refreshToken: boundedString(1, 4096) });

const loginFailed = () => new UnauthorizedError('The e-mail or the password is wrong');

/**
 * User login and refresh. Login finds the user by e-mail (in the given tenant, or across tenants when the
 * e-mail is in one only), checks the password with scrypt, and starts a session: a refresh-token family.
 */
export const loginApi = (deps: LoginApiDeps): Router => {
  const router = new Router({ prefix: '/v1/auth' });

  const tenantsOf = async (email: string): Promise<string[]> =>
    (
      await deps.readModels.list<User>(usersProjection.collection.name, {
        tenantId: platformPartition,
        filters: [{ op: 'eq', field: 'email', value: email }],
        sort: { field: 'email', direction: 'asc' },
        limit: 100,
      })
    ).map((user) => user.tenantId);

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

  router.post('/token', async (ctx) => {
    const body = decodeOrThrow(LoginBody, await readJsonBody(ctx, { limit: 16 * 1024 }));
    const email = normalizeEmail(body.email);
    const now = deps.clock().getTime();
    const keys = [`email:${email}`, `address:${ctx.ip}`];
    const wait = Math.max(
      deps.failures.byEmail.blockedFor(keys[0]!, now),
      deps.failures.byAddress.blockedFor(keys[1]!, now),
    );
    if (wait > 0) throw new TooManyRequestsError('Too many failed logins; try again later', wait);

    const tenants = body.tenantId ? [body.tenantId] : await tenantsOf(email);
    if (tenants.length === 0 && !body.tenantId) {
      // A user created a moment ago may not be in the read model yet: let it catch up once, briefly.
      await deps.users.waitFor(await deps.eventStore.headPosition(), 1000);
      tenants.push(...(await tenantsOf(email)));
    }
    if (tenants.length > 1) {
      throw new ValidationError([
        { path: 'tenantId', message: 'is required: this e-mail belongs to several tenants' },
      ]);
    }
    const tenantId = tenants[0];
    const { state } = tenantId
      ? await readAggregate(
          deps.eventStore,
          userDecider,
          streamName('user', tenantId, userIdFor(tenantId, email)),
        )
      : { state: { status: 'absent' as const } };
    // The decoy keeps a failed login as slow as a real check, so timing does not tell which e-mails exist.
    const matches = await verifyPassword(
      body.password,
      state.status === 'present' ? state.passwordHash : await decoyHash(),
    );
    if (state.status !== 'present' || !matches || state.user.status !== 'active') {
      deps.failures.byEmail.recordFailure(keys[0]!, now);
      deps.failures.byAddress.recordFailure(keys[1]!, now);
      throw loginFailed();
    }
    deps.failures.byEmail.reset(keys[0]!);

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
    if (!presented) throw new UnauthorizedError('The refresh token is not valid', 'invalid_token');
    const stream = streamName('session', presented.tenantId, presented.id);
    const session = await readAggregate(deps.eventStore, sessionDecider, stream);
    if (session.state.status === 'absent')
      throw new UnauthorizedError('The refresh token is not valid', 'invalid_token');
    const { userId } = session.state;

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
    const user = await readAggregate(
      deps.eventStore,
      userDecider,
      streamName('user', presented.tenantId, userId),
    );
    if (
      user.state.status !== 'present' ||
      user.state.user.status !== 'active' ||
      deps.revocations.isRevoked([userId])
    ) {
      throw new UnauthorizedError('The refresh token is not valid', 'invalid_token');
    }
    issue(ctx, user.state.user, presented.id, secret);
  });

  return router;
};
