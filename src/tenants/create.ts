import { apiKeyPrefix, formatCredential } from '../credentials/credential-strings.js';
import type { CommandContext, CommandResult } from '../core/command-handler.js';
import { handleCommand } from '../core/command-handler.js';
import { createSecretCredential } from '../credentials/create.js';
import { apiKeyDecider } from '../credentials/secret-credential.decider.js';
import type { EventStore } from '../eventstore/port.js';
import { tenantStream } from './load.js';
import type { Tenant, TenantEvent, TenantState } from './decider.js';
import { tenantDecider } from './decider.js';

/**
 * Creates a tenant and its first admin API key, whose secret is returned once. Used by POST /v1/tenants and
 * by the CLI. They are two streams, so two appends: the key's comes first, so that a request whose second
 * append fails (a full disk, a lost database) leaves no tenant behind, only a key of a tenant that does not
 * exist, whose secret nobody was shown. A retry then makes one whole tenant, rather than a second one
 * beside a tenant without an admin key.
 */
export const createTenant = async (
  eventStore: EventStore,
  newId: (prefix: string) => string,
  context: (tenantId: string) => CommandContext,
  { name, notificationEmail }: { name: string; notificationEmail: string },
): Promise<{ tenant: Tenant; adminApiKey: string; result: CommandResult<TenantState, TenantEvent> }> => {
  const tenantId = newId('t');
  const initial = await createSecretCredential(eventStore, apiKeyDecider, 'apikey', context(tenantId), {
    id: newId('k'),
    name: 'initial admin key',
    scopes: ['admin'],
  });
  const result = await handleCommand(
    eventStore,
    tenantDecider,
    tenantStream(tenantId),
    { type: 'CreateTenant', tenantId, name, notificationEmail },
    context(tenantId),
  );
  if (result.state.status === 'absent') throw new Error('CreateTenant produced no tenant');
  const adminApiKey = formatCredential(apiKeyPrefix, {
    tenantId,
    id: initial.credential.id,
    secret: initial.secret,
  });
  return { tenant: result.state.tenant, adminApiKey, result };
};
