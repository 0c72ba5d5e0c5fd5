import Router from '@koa/router';
import type { ResourceRouteContext } from '../feature.js';
import { apiKeysProjection, oauthClientsProjection } from '../../projections/secret-credentials.js';
import { usersProjection } from '../../projections/users.js';
import { requireScope } from '../http/guard.js';
import { apiKeyPrefix, formatClientId, formatCredential } from './credential-strings.js';
import { hashPassword } from './passwords.js';
import { loadTenant } from '../tenants/load.js';
import { createSecretCredential } from './create.js';
import type { Decider, DomainEvent } from '../core/decider.js';
import { NotFoundError } from '../core/errors.js';
import { readJsonBody, decodedJsonBody } from '../http/body.js';
import { decodeOrThrow } from '../http/codec.js';
import { commandContext } from '../http/command-context.js';
import { oldestFirstList } from '../http/paging.js';
import { aggregateResource } from '../http/aggregate-resource.js';
import { pathParam, sendResource } from '../http/resource.js';
import { platformPartition } from '../readmodels/aggregate-projection.js';
import { CreateSecretCredentialBody, CreateUserBody } from './codecs.js';
import type { CredentialCommand, CredentialState, SecretCredential } from './secret-credential.decider.js';
import { apiKeyDecider, oauthClientDecider } from './secret-credential.decider.js';
import type { User, UserState } from './user.decider.js';
import { normalizeEmail, userDecider, userIdFor } from './user.decider.js';

export type CredentialsApiDeps = ResourceRouteContext;

/** A tenant's credentials, listed oldest first from a platform-wide collection. */
const listForTenant = (deps: CredentialsApiDeps, collection: string) =>
  oldestFirstList(deps, collection, (ctx) => ({
    tenantId: platformPartition,
    filters: [{ op: 'eq', field: 'tenantId', value: pathParam(ctx, 'tenantId') }],
  }));

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
  const credentialOf = (state: CredentialState): SecretCredential => {
    if (state.status === 'absent') throw new NotFoundError('No such credential');
    return state.credential;
  };
  const credentials = aggregateResource(deps, options.decider, credentialOf, { ifMatch: false });

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

  router.get(`${options.path}/:id`, admin, credentials.read);

  router.delete(`${options.path}/:id`, admin, (ctx) => credentials.remove(ctx, { type: 'Revoke' }));
};

export const credentialsApi = (deps: CredentialsApiDeps): Router => {
  const router = new Router({ prefix: '/v1/tenants/:tenantId' });
  const admin = requireScope(deps.auth, 'admin');
  const userOf = (state: UserState): User => {
    if (state.status === 'absent') throw new NotFoundError('No such user');
    return state.user;
  };
  const users = aggregateResource(deps, userDecider, userOf, { ifMatch: false });

  router.post('/users', requireScope(deps.auth, 'admin', { allowPlatform: true }), async (ctx) => {
    const body = await decodedJsonBody(ctx, CreateUserBody, deps.bodyLimit);
    const tenantId = pathParam(ctx, 'tenantId');
    await loadTenant(deps.eventStore, tenantId);
    const email = normalizeEmail(body.email);
    const userId = userIdFor(tenantId, email);
    await users.create(
      ctx,
      { id: userId, location: `/v1/tenants/${tenantId}/users/${userId}` },
      {
        type: 'CreateUser',
        userId,
        email,
        passwordHash: await hashPassword(body.password),
        scopes: body.scopes,
      },
    );
  });

  router.get('/users', admin, listForTenant(deps, usersProjection.collection.name));

  router.get('/users/:id', admin, users.read);

  router.post('/users/:id/disable', admin, (ctx) => users.change(ctx, { type: 'DisableUser' }));

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
