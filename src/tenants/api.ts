import Router from '@koa/router';
import type { ResourceRouteContext } from '../feature.js';
import { tenantsProjection } from '../../projections/tenants.js';
import { requirePlatform, requireScope } from '../http/guard.js';
import { decodedJsonBody } from '../http/body.js';

import { oldestFirstList } from '../http/paging.js';
import { pathParam, sendResource } from '../http/resource.js';
import { CreateTenantBody } from './codecs.js';
import { commandContext } from '../http/command-context.js';
import { platformPartition } from '../readmodels/aggregate-projection.js';
import { loadTenant } from './load.js';
import { createTenant } from './create.js';

export type TenantsApiDeps = ResourceRouteContext;

/** Tenants: created and listed by the platform administrator, read by their own admins. */
export const tenantsApi = (deps: TenantsApiDeps): Router => {
  const router = new Router({ prefix: '/v1/tenants' });

  router.post('/', requirePlatform(deps.auth), async (ctx) => {
    const body = await decodedJsonBody(ctx, CreateTenantBody, deps.bodyLimit);
    const { tenant, adminApiKey, result } = await createTenant(
      deps.eventStore,
      deps.ids,
      (tenantId) => commandContext(ctx, deps, tenantId),
      body,
    );
    ctx.set('Location', `/v1/tenants/${tenant.id}`);
    ctx.set('Cache-Control', 'no-store');
    // Every tenant starts with one admin API key, shown here once, so that its operators can sign in.
    sendResource(ctx, 201, { ...tenant, adminApiKey }, result);
  });

  router.get(
    '/',
    requirePlatform(deps.auth),
    oldestFirstList(deps, tenantsProjection.collection.name, () => ({
      tenantId: platformPartition,
      filters: [],
    })),
  );

  router.get('/:tenantId', requireScope(deps.auth, 'admin', { allowPlatform: true }), async (ctx) => {
    const tenant = await loadTenant(deps.eventStore, pathParam(ctx, 'tenantId'));
    sendResource(ctx, 200, tenant, { version: tenant.version, position: null });
  });

  return router;
};
