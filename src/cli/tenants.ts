import { randomUUID } from 'node:crypto';
import { tenantsProjection } from '../../projections/tenants.js';
import { newId } from '../core/ids.js';
import { CreateTenantBody } from '../tenants/codecs.js';
import { decodeOrThrow } from '../http/codec.js';
import { platformPartition } from '../readmodels/aggregate-projection.js';
import { createTenant } from '../tenants/create.js';
import type { Tenant } from '../tenants/decider.js';
import { flags, withFlagNames } from './args.js';
import type { Commands } from './command.js';
import { table } from './output.js';
import { catchUp, withStores } from './stores.js';

export const tenantCommands: Commands = {
  'tenant create': {
    help: 'tenant create --name <name> --email <address>\n  Creates a tenant and its first admin API key.',
    run: async (args, { print, ...context }) => {
      const { values } = flags(args, {
        options: { name: { type: 'string' }, email: { type: 'string' } },
      });
      const body = withFlagNames({ notificationEmail: 'email' }, () =>
        decodeOrThrow(CreateTenantBody, { name: values.name, notificationEmail: values.email }),
      );
      await withStores(context, async (stores) => {
        const { tenant, adminApiKey } = await createTenant(
          stores.eventStore,
          (prefix) => newId(prefix),
          (tenantId) => ({
            tenantId,
            actor: 'cli',
            correlationId: randomUUID(),
            causationId: null,
            now: new Date(),
            newEventId: () => randomUUID(),
          }),
          body,
        );
        print(
          `Created tenant ${tenant.id} (${tenant.name}).\nAdmin API key, shown only now:\n  ${adminApiKey}`,
          { ...tenant, adminApiKey },
        );
      });
    },
  },
  'tenant list': {
    help: 'tenant list\n  Lists every tenant, oldest first.',
    run: async (args, { print, ...context }) => {
      flags(args, { options: {} });
      await withStores(context, async (stores) => {
        await catchUp(tenantsProjection, stores, 30_000);
        const tenants = await stores.readModels.list<Tenant>(tenantsProjection.collection.name, {
          tenantId: platformPartition,
          filters: [],
          sort: { field: 'createdAt', direction: 'asc' },
          limit: 10_000,
        });
        const rows = tenants.map((t) => [t.id, t.name, t.createdAt, t.notificationEmail]);
        print(
          rows.length > 0
            ? table([['id', 'name', 'created', 'notification e-mail'], ...rows])
            : '(no tenants)',
          tenants,
        );
      });
    },
  },
};
