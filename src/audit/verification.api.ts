import type { KeyObject } from 'node:crypto';
import Router from '@koa/router';
import { requireScope, type Authenticator } from '../http/guard.js';
import { UnavailableError } from '../core/errors.js';
import type { EventStore } from '../eventstore/port.js';
import { pathParam } from '../http/resource.js';
import type { Keyring } from '../auth/signing-keys.js';
import { digestKeysOf } from './digest-signature.js';
import { tenantSlots } from './tenant-slots.js';
import { verifyTenant, type VerifyReport } from './verify.js';

export interface VerificationApiDeps {
  eventStore: EventStore;
  auth: Authenticator;
  /** Its digestJwks check the digests' signatures. */
  keyring: () => Keyring;
  /** How long one verification may read before it gives up; `obs audit verify` has no such bound. */
  budgetMs?: number;
}

/** Long enough for some hundreds of thousands of events on SQLite; longer belongs to the CLI. */
export const defaultVerificationBudgetMs = 20_000;

class OverBudget extends Error {}
class CallerLeft extends Error {}

/**
 * Runs verifyTenant (the same verifier as `obs audit verify`) with a time budget, checked after each page
 * the verifier reads: its memory is already bounded (one stream's positions, one node per Merkle level).
 * An aborted `signal` (the caller left) stops it at the next page too, with a CallerLeft.
 */
export const verifyWithin = async (
  eventStore: EventStore,
  tenantId: string,
  budgetMs: number,
  signal?: AbortSignal,
  digestKeys?: ReadonlyMap<string, KeyObject>,
): Promise<VerifyReport> => {
  const deadline = Date.now() + budgetMs;
  try {
    return await verifyTenant(
      eventStore,
      tenantId,
      () => {
        if (signal?.aborted) throw new CallerLeft();
        if (Date.now() > deadline) throw new OverBudget();
      },
      digestKeys,
    );
  } catch (error) {
    if (!(error instanceof OverBudget)) throw error;
    throw new UnavailableError(
      `The history is too long to verify within ${Math.round(budgetMs / 1000)} s here; ` +
        `run \`obs audit verify --tenant ${tenantId}\` instead`,
      60,
    );
  }
};

/** Verifications one process runs at once: each reads a whole history, and the cores serve requests too. */
export const concurrentVerifications = 2;

/**
 * GET /v1/tenants/{t}/audit/verification: the tenant's tamper check. Each reads the tenant's whole history,
 * so a process runs one per tenant and `concurrentVerifications` in all; another waits for one to finish
 * (503 with Retry-After) rather than adding to the load. One tenant never holds every slot, and a
 * verification whose caller left stops at its next page.
 */
export const verificationApi = (deps: VerificationApiDeps): Router => {
  const router = new Router({ prefix: '/v1/tenants/:tenantId' });
  const budgetMs = deps.budgetMs ?? defaultVerificationBudgetMs;
  const slot = tenantSlots(concurrentVerifications, 'verification');

  router.get('/audit/verification', requireScope(deps.auth, 'admin'), async (ctx) => {
    const tenantId = pathParam(ctx, 'tenantId');
    await slot(tenantId, async () => {
      const left = new AbortController();
      const onClose = () => {
        if (!ctx.res.writableFinished) left.abort();
      };
      ctx.res.once('close', onClose);
      try {
        const keys = digestKeysOf(deps.keyring().digestJwks);
        const report = await verifyWithin(deps.eventStore, tenantId, budgetMs, left.signal, keys);
        ctx.body = { ...report, ok: report.broken === null, verifiedAt: new Date().toISOString() };
      } catch (error) {
        if (!(error instanceof CallerLeft)) throw error;
        ctx.status = 499; // nobody reads it: for the access log and the metrics, as nginx counts a caller that left
      } finally {
        ctx.res.off('close', onClose);
      }
    });
  });

  return router;
};
