import type { DeliveryEvent } from './delivery.decider.js';

/**
 * The schema history of the webhook events, which src/features.ts hands to the stores with every other
 * feature's: only types here, nothing that imports a store.
 */

type ClaimedV2 = Extract<DeliveryEvent, { type: 'DeliveryAttemptClaimed' }>['data'];

/**
 * v1 -> v2: a claim recorded before claims had ids gets `claimId: null`, which no outcome names, so only
 * the process that made it (running the code of its time) could settle it; a take-over claims it anew.
 * An id that is there is kept, so data already in the v2 shape reads unchanged.
 */
export const deliveryAttemptClaimedV1ToV2 = (data: unknown): ClaimedV2 => {
  const { claimId, ...rest } = data as Omit<ClaimedV2, 'claimId'> & { claimId?: string | null };
  return { ...rest, claimId: claimId ?? null };
};

/** The current version of each webhook event type with a history, and how to read older ones. */
export const webhookEventSchemas = {
  DeliveryAttemptClaimed: { current: 2, upcasters: { 1: deliveryAttemptClaimedV1ToV2 } },
} as const;
