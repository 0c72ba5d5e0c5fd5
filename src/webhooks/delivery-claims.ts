import { randomUUID } from 'node:crypto';
import { handleCommand, handleCommandOn, type KnownState } from '../core/command-handler.js';
import { VersionConflictError } from '../core/errors.js';
import { streamName } from '../core/streams.js';
import { systemContextOf } from '../core/system-context.js';
import type { DelivererDeps } from './deliverer-types.js';
import {
  deliveryDecider,
  type Delivery,
  type DeliveryCommand,
  type DeliveryState,
  StaleClaimError,
  type Claimant,
} from './delivery.decider.js';

export const systemContext = systemContextOf('system:webhooks');

export type Claimed = KnownState<DeliveryState> & {
  state: { status: 'present'; delivery: Delivery & { claimId: string } };
};

/** A delivery this instance holds the claim of: present, and claimed under an id it made. */
export const isClaimed = (known: KnownState<DeliveryState>): known is Claimed =>
  known.state.status === 'present' &&
  known.state.delivery.status === 'claimed' &&
  known.state.delivery.claimId !== null;

/** The claims of one instance (`instance`), and the commands that follow them on their own claim. */
export const deliveryClaims = (deps: DelivererDeps, instance: string) => {
  const { eventStore, logger } = deps;

  /** A new claim of this instance: its id is what the attempt's outcome or release names. */
  const newClaim = (): Claimant => ({
    claimedBy: instance,
    claimId: randomUUID(),
    claimTimeoutMs: deps.settings.claimTimeoutMs,
  });

  /**
   * The command that follows one's own claim, on the state it left. If the stream moved since, it is
   * decided again on what the stream holds now: outcomes and releases name their claim, so the decider
   * refuses them (StaleClaimError) once another instance has taken the delivery over.
   */
  const onClaimed = async (tenantId: string, claimed: Claimed, command: DeliveryCommand) => {
    const { deliveryId } = claimed.state.delivery;
    const stream = streamName('delivery', tenantId, deliveryId);
    const context = systemContext(tenantId, deps.clock(), deliveryId);
    try {
      return await handleCommandOn(eventStore, deliveryDecider, stream, claimed, command, context);
    } catch (error) {
      if (!(error instanceof VersionConflictError)) throw error;
      return handleCommand(eventStore, deliveryDecider, stream, command, context);
    }
  };

  /**
   * Records an outcome or a release on the attempt's own claim; null, and a warning, when that claim is no
   * longer current: the attempt outlived its claim, and what it learnt belongs to no attempt in the stream.
   */
  const settle = async (
    tenantId: string,
    claimed: Claimed,
    command: Extract<DeliveryCommand, { type: 'RecordOutcome' | 'Release' }>,
  ) => {
    try {
      return await onClaimed(tenantId, claimed, command);
    } catch (error) {
      if (!(error instanceof StaleClaimError)) throw error;
      const { deliveryId, webhookId } = claimed.state.delivery;
      logger.warn(
        {
          subscriptionId: webhookId,
          deliveryId,
          claimId: error.claimId,
          currentClaimId: error.currentClaimId,
          ...(command.type === 'RecordOutcome'
            ? { ok: command.outcome.ok, status: command.outcome.statusCode }
            : { reason: command.reason }),
        },
        command.type === 'RecordOutcome'
          ? 'webhook outcome refused: claim taken over'
          : 'webhook release refused: claim taken over',
      );
      return null;
    }
  };

  return { newClaim, onClaimed, settle };
};

export type DeliveryClaims = ReturnType<typeof deliveryClaims>;
