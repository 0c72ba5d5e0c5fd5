import Router from '@koa/router';
import { tenantsProjection } from '../../projections/tenants.js';
import type { Authenticator } from '../auth/authenticate.js';
import { requirePlatform, requireScope } from '../auth/authenticate.js';
import { handleCommand } from '../core/command-handler.js';
import type { Clock, IdGenerator } from '../core/ids.js';
import type { EventStore } from '../eventstore/port.js';
import { readJsonBody } from '../http/body.js';
import { decodeOrThrow } from '../http/codec.js';
import type { CursorCodec } from '../http/cursor.js';
import { listPage } from '../http/paging.js';
import { pathParam, sendResource } from '../http/resource.js';
import { CreateTenantBody, ListParams } from '../credentials/codecs.js';
import { commandContext } from '../http/command-context.js';
import { platformPartition } from '../readmodels/aggregate-projection.js';
import type { ReadModelStore } from '../readmodels/port.js';
import type { Tenant } from './tenant.js';
import { tenantDecider } from './tenant.js';
import { createSecretCredential } from '../credentials/create.js';
import { loadTenant, tenantStream } from './load.js';
import { apiKeyDecider } from '../credentials/secret-credential.js';
import { apiKeyPrefix, formatCredential } from '../auth/credential-strings.js';

export interface TenantsApiDeps {
  eventStore: EventStore;
  readModels: ReadModelStore;
  cursors: CursorCodec;
  auth: Authenticator;
  clock: Clock;
  ids: IdGenerator;
  bodyLimit: number;
}

/** Tenants: created and listed by the platform administrator, read by their own admins. */
export const tenantsApi = (deps: TenantsApiDeps): Router => {
  const router = new Router({ prefix: '/v1/tenants' });

  router.post('/', requirePlatform(deps.auth), async (ctx) => {
    const body = decodeOrThrow(CreateTenantBody, await readJsonBody(ctx, { limit: deps.bodyLimit }));
    const tenantId = deps.ids('t');
    const result = await handleCommand(
      deps.eventStore,
      tenantDecider,
      tenantStream(tenantId),
      { type: 'CreateTenant', tenantId, name: body.name, notificationEmail: body.notificationEmail },
      commandContext(ctx, deps, tenantId),
    );
    if (result.state.status === 'absent') throw new Error('CreateTenant produced no tenant');
    // Every tenant starts with one admin API key, shown here once, so that its operators can sign in.
    const initial = await createSecretCredential(
      deps.eventStore,
      apiKeyDecider,
      'apikey',
      commandContext(ctx, deps, tenantId),
      {
        id: deps.ids('k'),
        name: 'initial admin key',
        scopes: ['admin'],
      },
    );
    const adminApiKey = formatCredential(apiKeyPrefix, {
      tenantId,
      id: initial.credential.id,
      secret: initial.secret,
    });
    ctx.set('Location', `/v1/tenants/${tenantId}`);
    ctx.set('Cache-Control', 'no-store');
    sendResource(ctx, 201, { ...result.state.tenant, adminApiKey }, result);
  });

  router.get('/', requirePlatform(deps.auth), async (ctx) => {
    const params = decodeOrThrow(ListParams, ctx.query);
    ctx.body = await listPage<Tenant>(
      deps,
      tenantsProjection.collection.name,
      { tenantId: platformPartition, filters: [], sort: { field: 'createdAt', direction: 'asc' } },
      { limit: params.limit ?? 50, cursor: params.cursor },
      (tenant) => tenant.createdAt,
    );
  });

  router.get('/:tenantId', requireScope(deps.auth, 'admin', { allowPlatform: true }), async (ctx) => {
    const tenant = await loadTenant(deps.eventStore, pathParam(ctx, 'tenantId'));
    sendResource(ctx, 200, tenant, { version: tenant.version, position: null });
  });

  return router;
};
