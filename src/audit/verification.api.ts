import Router from '@koa/router';
import { requireScope, type Authenticator } from '../auth/authenticate.js';
import { UnavailableError } from '../core/errors.js';
import type { EventStore } from '../eventstore/port.js';
import { pathParam } from '../http/resource.js';
import { verifyTenant, type VerifyReport } from './verify.js';

export interface VerificationApiDeps {
  eventStore: EventStore;
  auth: Authenticator;
  /** How long one verification may read before it gives up; `obs audit verify` has no such bound. */
  budgetMs?: number;
}

/** Long enough for some hundreds of thousands of events on SQLite; longer belongs to the CLI. */
export const defaultVerificationBudgetMs = 20_000;

class OverBudget extends Error {}

/**
 * Runs verifyTenant (the same verifier as `obs audit verify`) with a time budget, checked after each page
 * the verifier reads: its memory is already bounded (one stream's positions, one node per Merkle level).
 */
export const verifyWithin = async (
  eventStore: EventStore,
  tenantId: string,
  budgetMs: number,
): Promise<VerifyReport> => {
  const deadline = Date.now() + budgetMs;
  try {
    return await verifyTenant(eventStore, tenantId, () => {
      if (Date.now() > deadline) throw new OverBudget();
    });
  } catch (error) {
    if (!(error instanceof OverBudget)) throw error;
    throw new UnavailableError(
      `The history is too long to verify within ${Math.round(budgetMs / 1000)} s here; ` +
        `run \`obs audit verify --tenant ${tenantId}\` instead`,
      60,
    );
  }
};

/**
 * GET /v1/tenants/{t}/audit/verification: the tenant's tamper check. One verification at a time per
 * process, since each reads the tenant's whole history: a second one waits for the first to finish
 * (503 with Retry-After) rather than doubling the load.
 */
export const verificationApi = (deps: VerificationApiDeps): Router => {
  const router = new Router({ prefix: '/v1/tenants/:tenantId' });
  const budgetMs = deps.budgetMs ?? defaultVerificationBudgetMs;
  let running = false;

  router.get('/audit/verification', requireScope(deps.auth, 'admin'), async (ctx) => {
    if (running) throw new UnavailableError('Another verification is running; try again shortly', 5);
    running = true;
    try {
      const report = await verifyWithin(deps.eventStore, pathParam(ctx, 'tenantId'), budgetMs);
      ctx.body = { ...report, ok: report.broken === null, verifiedAt: new Date().toISOString() };
    } finally {
      running = false;
    }
  });

  return router;
};
