import { tenantIdPattern } from '../core/ids.js';

/**
 * The shapes of the secrets handed to clients. Each names its tenant and id (the lookup part) before the
 * secret, so the service can find the credential's stream without any index:
 * - API key: `obs_<tenantId>.<keyId>.<secret>`, e.g. `obs_t_acme.k_01j….Zm9v…`
 * - OAuth client id: `<tenantId>.<clientId>`, with the secret sent separately
 * - refresh token: `ort_<tenantId>.<sessionId>.<secret>`
 */
const part = {
  tenant: tenantIdPattern,
  id: /^[a-z]_[0-9a-z]{26}$/,
  secret: /^[A-Za-z0-9_-]{43}$/,
};

export interface CompoundCredential {
  tenantId: string;
  id: string;
  secret: string;
}

export const formatCredential = (prefix: string, { tenantId, id, secret }: CompoundCredential): string =>
  `${prefix}${tenantId}.${id}.${secret}`;

export const parseCredential = (prefix: string, value: string): CompoundCredential | null => {
  if (!value.startsWith(prefix) || value.length > 200) return null;
  const [tenantId, id, secret, extra] = value.slice(prefix.length).split('.');
  if (extra !== undefined || !tenantId || !id || !secret) return null;
  return part.tenant.test(tenantId) && part.id.test(id) && part.secret.test(secret)
    ? { tenantId, id, secret }
    : null;
};

export const apiKeyPrefix = 'obs_';
export const refreshTokenPrefix = 'ort_';

export const formatClientId = (tenantId: string, clientId: string): string => `${tenantId}.${clientId}`;

export const parseClientId = (value: string): { tenantId: string; id: string } | null => {
  const [tenantId, id, extra] = value.split('.');
  return extra === undefined && tenantId && id && part.tenant.test(tenantId) && part.id.test(id)
    ? { tenantId, id }
    : null;
};
