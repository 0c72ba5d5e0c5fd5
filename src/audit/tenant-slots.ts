import { UnavailableError } from '../core/errors.js';

/**
 * Reads of a tenant's whole history that a process runs at once: one per tenant and `total` in all, so one
 * tenant never holds every slot. Another asks again later (503 with Retry-After) rather than adding to the
 * load: the cores serve requests too.
 */
export const tenantSlots = (total: number, what: string) => {
  const running = new Set<string>();
  return async <T>(tenantId: string, read: () => Promise<T>): Promise<T> => {
    if (running.has(tenantId))
      throw new UnavailableError(`A ${what} of this tenant's history is running; try again shortly`, 5);
    if (running.size >= total) throw new UnavailableError(`Other ${what}s are running; try again shortly`, 5);
    running.add(tenantId);
    try {
      return await read();
    } finally {
      running.delete(tenantId);
    }
  };
};
