/**
 * Stream names: `<aggregate>-<tenantId>_<id>`, for example `observation-t_3k2v..._o_01j9...`.
 * - The category (before the first `-`) is the aggregate type, so one kind of event can be consumed across
 *   tenants with the prefix `observation-`.
 * - The tenant comes first in the id part, so `observation-<tenantId>_` selects one tenant's observations,
 *   and every event also carries the tenant in its metadata for whole-tenant history in commit order.
 * Tenant ids and entity ids are `<prefix>_<base32>` and never contain `-`, so the name parses back.
 */
export const streamName = (aggregate: string, tenantId: string, id: string): string =>
  `${aggregate}-${tenantId}_${id}`;

const pattern = /^([a-z][a-zA-Z]*)-(t_[0-9a-z]+)_(.+)$/;

export const parseStreamName = (name: string): { aggregate: string; tenantId: string; id: string } | null => {
  const match = pattern.exec(name);
  return match ? { aggregate: match[1]!, tenantId: match[2]!, id: match[3]! } : null;
};
