import { randomBytes } from 'node:crypto';
import { tempDir } from './processes.js';

/**
 * The tenant and credential the HTTP load runs as: a tenant created with the platform admin key (passed to
 * the child as PLATFORM_ADMIN_KEY), then an API key with just the observation scopes.
 */

export interface BenchPrincipal {
  tenantId: string;
  headers: Record<string, string>;
  /** The new tenant's admin API key (scope `admin`). */
  tenantAdminKey: string;
}

export const platformAdminKey = (): string => randomBytes(32).toString('base64url');

/**
 * A bench service's data directory, platform admin key, and the environment every bench service starts
 * with: warn-level logs, and no per-credential rate limit, since the load comes from one credential and
 * would measure 429s, not the service. A phase spreads its own settings over `env`.
 */
export const benchService = (name: string) => {
  const dataDir = tempDir(name);
  const adminKey = platformAdminKey();
  const env = { DATA_DIR: dataDir, LOG_LEVEL: 'warn', PLATFORM_ADMIN_KEY: adminKey, RATE_LIMIT: 'off' };
  return { dataDir, adminKey, env };
};

const post = async (url: string, apiKey: string, body: unknown) => {
  const response = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-api-key': apiKey },
    body: JSON.stringify(body),
  });
  const text = await response.text();
  return { status: response.status, text, json: () => JSON.parse(text) as Record<string, unknown> };
};

const field = (json: Record<string, unknown>, name: string, what: string): string => {
  const value = json[name];
  if (typeof value !== 'string')
    throw new Error(`${what} answered without a string ${name}: ${JSON.stringify(json)}`);
  return value;
};

export const provision = async (base: string, adminKey: string): Promise<BenchPrincipal> => {
  const tenant = await post(`${base}/v1/tenants`, adminKey, {
    name: 'bench',
    notificationEmail: 'bench@example.com',
  });
  if (tenant.status !== 201) throw new Error(`POST /v1/tenants answered ${tenant.status}: ${tenant.text}`);
  const tenantId = field(tenant.json(), 'id', 'POST /v1/tenants');
  const tenantAdminKey = field(tenant.json(), 'adminApiKey', 'POST /v1/tenants');

  const key = await post(`${base}/v1/tenants/${tenantId}/api-keys`, tenantAdminKey, {
    name: 'bench',
    scopes: ['observations:read', 'observations:write'],
  });
  if (key.status !== 201) throw new Error(`POST …/api-keys answered ${key.status}: ${key.text}`);
  return {
    tenantId,
    headers: { 'x-api-key': field(key.json(), 'key', 'POST …/api-keys') },
    tenantAdminKey,
  };
};
