import Router from '@koa/router';
import type { Context } from 'koa';
import { apiKeysProjection, oauthClientsProjection } from '../../projections/secret-credentials.js';
import { usersProjection } from '../../projections/users.js';
import type { Authenticator } from '../http/guard.js';
import { requireScope } from '../http/guard.js';
import { apiKeyPrefix, formatClientId, formatCredential } from './credential-strings.js';
import { hashPassword } from './passwords.js';
import { handleCommand } from '../core/command-handler.js';
import { loadTenant } from '../tenants/load.js';
import { createSecretCredential } from './create.js';
import type { Decider, DomainEvent } from '../core/decider.js';
import { NotFoundError } from '../core/errors.js';
import type { Clock, IdGenerator } from '../core/ids.js';
import { streamName } from '../core/streams.js';
import type { EventStore } from '../eventstore/port.js';
import { readJsonBody } from '../http/body.js';
import { decodeOrThrow } from '../http/codec.js';
import { commandContext } from '../http/command-context.js';
import type { CursorCodec } from '../http/cursor.js';
import { listPage, sendPage } from '../http/paging.js';
import { pathParam, sendAggregate, sendResource } from '../http/resource.js';
import { platformPartition } from '../readmodels/aggregate-projection.js';
import type { ReadModelStore } from '../readmodels/port.js';
import { CreateSecretCredentialBody, CreateUserBody } from './codecs.js';
import { ListParams } from '../http/paging.js';
import type { CredentialCommand, CredentialState, SecretCredential } from './secret-credential.decider.js';
import { apiKeyDecider, oauthClientDecider } from './secret-credential.decider.js';
import type { User, UserState } from './user.decider.js';
import { normalizeEmail, userDecider, userIdFor } from './user.decider.js';

export interface CredentialsApiDeps {
  eventStore: EventStore;
  readModels: ReadModelStore;
  cursors: CursorCodec;
  auth: Authenticator;
  clock: Clock;
  ids: IdGenerator;
  bodyLimit: number;
}

/** A tenant's credentials, listed oldest first from a platform-wide collection. */
const listForTenant = (deps: CredentialsApiDeps, collection: string) => async (ctx: Context) => {
  const params = decodeOrThrow(ListParams, ctx.query);
  sendPage(
    ctx,
    await listPage(
      deps,
      collection,
      {
        tenantId: platformPartition,
        filters: [{ op: 'eq', field: 'tenantId', value: pathParam(ctx, 'tenantId') }],
        sort: { field: 'createdAt', direction: 'asc' },
      },
      { limit: params.limit ?? 50, cursor: params.cursor },
    ),
  );
};

/**
 * API keys and OAuth clients: created with their secret shown exactly once, listed and read without it,
 * revoked with DELETE.
 */
const secretCredentialRoutes = <E extends DomainEvent>(
  router: Router,
  deps: CredentialsApiDeps,
  options: {
    path: string;
    aggregate: string;
    idPrefix: string;
    decider: Decider<CredentialState, CredentialCommand, E>;
    collection: string;
    reveal: (tenantId: string, id: string, secret: string) => Record<string, string>;
  },
) => {
  const admin = requireScope(deps.auth, 'admin');
  const stream = (ctx: Context) =>
    streamName(options.aggregate, pathParam(ctx, 'tenantId'), pathParam(ctx, 'id'));
  const credentialOf = (state: CredentialState): SecretCredential => {
    if (state.status === 'absent') throw new NotFoundError('No such credential');
    return state.credential;
  };

  // The platform key may create credentials too: that is how a new tenant gets its first admin.
  router.post(options.path, requireScope(deps.auth, 'admin', { allowPlatform: true }), async (ctx) => {
    const body = decodeOrThrow(
      CreateSecretCredentialBody,
      await readJsonBody(ctx, { limit: deps.bodyLimit }),
    );
    const tenantId = pathParam(ctx, 'tenantId');
    await loadTenant(deps.eventStore, tenantId);
    const created = await createSecretCredential(
      deps.eventStore,
      options.decider,
      options.aggregate,
      commandContext(ctx, deps),
      {
        id: deps.ids(options.idPrefix),
        name: body.name,
        scopes: body.scopes,
      },
    );
    ctx.set('Location', `/v1/tenants/${tenantId}${options.path}/${created.credential.id}`);
    ctx.set('Cache-Control', 'no-store');
    sendResource(
      ctx,
      201,
      { ...created.credential, ...options.reveal(tenantId, created.credential.id, created.secret) },
      created.result,
    );
  });

  router.get(options.path, admin, listForTenant(deps, options.collection));

  router.get(`${options.path}/:id`, admin, (ctx) =>
    sendAggregate(ctx, deps.eventStore, options.decider, stream(ctx), credentialOf),
  );

  router.delete(`${options.path}/:id`, admin, async (ctx) => {
    const result = await handleCommand(
      deps.eventStore,
      options.decider,
      stream(ctx),
      { type: 'Revoke' },
      commandContext(ctx, deps),
    );
    if (result.position !== null) ctx.set('X-Position', String(result.position));
    ctx.status = 204;
  });
};

export const credentialsApi = (deps: CredentialsApiDeps): Router => {
  const router = new Router({ prefix: '/v1/tenants/:tenantId' });
  const admin = requireScope(deps.auth, 'admin');
  const userStream = (ctx: Context) => streamName('user', pathParam(ctx, 'tenantId'), pathParam(ctx, 'id'));
  const userOf = (state: UserState): User => {
    if (state.status === 'absent') throw new NotFoundError('No such user');
    return state.user;
  };

  router.post('/users', requireScope(deps.auth, 'admin', { allowPlatform: true }), async (ctx) => {
    const body = decodeOrThrow(CreateUserBody, await readJsonBody(ctx, { limit: deps.bodyLimit }));
    const tenantId = pathParam(ctx, 'tenantId');
    await loadTenant(deps.eventStore, tenantId);
    const email = normalizeEmail(body.email);
    const userId = userIdFor(tenantId, email);
    const result = await handleCommand(
      deps.eventStore,
      userDecider,
      streamName('user', tenantId, userId),
      {
        type: 'CreateUser',
        userId,
        email,
        passwordHash: await hashPassword(body.password),
        scopes: body.scopes,
      },
      commandContext(ctx, deps),
    );
    ctx.set('Location', `/v1/tenants/${tenantId}/users/${userId}`);
    sendResource(ctx, 201, userOf(result.state), result);
  });

  router.get('/users', admin, listForTenant(deps, usersProjection.collection.name));

  router.get('/users/:id', admin, (ctx) =>
    sendAggregate(ctx, deps.eventStore, userDecider, userStream(ctx), userOf),
  );

  router.post('/users/:id/disable', admin, async (ctx) => {
    const result = await handleCommand(
      deps.eventStore,
      userDecider,
      userStream(ctx),
      { type: 'DisableUser' },
      commandContext(ctx, deps),
    );
    sendResource(ctx, 200, userOf(result.state), result);
  });

  secretCredentialRoutes(router, deps, {
    path: '/api-keys',
    aggregate: 'apikey',
    idPrefix: 'k',
    decider: apiKeyDecider,
    collection: apiKeysProjection.collection.name,
    reveal: (tenantId, id, secret) => ({ key: formatCredential(apiKeyPrefix, { tenantId, id, secret }) }),
  });

  secretCredentialRoutes(router, deps, {
    path: '/oauth-clients',
    aggregate: 'oauthclient',
    idPrefix: 'c',
    decider: oauthClientDecider,
    collection: oauthClientsProjection.collection.name,
    reveal: (tenantId, id, secret) => ({ clientId: formatClientId(tenantId, id), clientSecret: secret }),
  });

  return router;
};
