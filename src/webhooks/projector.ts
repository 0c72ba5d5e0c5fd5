import { handleCommandOn, type CommandResult } from '../core/command-handler.js';
import { NO_STREAM, type RecordedEvent } from '../core/events.js';
import type { Clock } from '../core/ids.js';
import { streamName } from '../core/streams.js';
import { lostRace, systemContextOf } from '../core/system-context.js';
import type { ConsumerOutcome, EventStore } from '../eventstore/port.js';
import type { Deliverer } from './deliverer.js';
import {
  deliveryDecider,
  deliveryIdFor,
  type Claimant,
  type DeliveryEvent,
  type DeliveryState,
} from './delivery.decider.js';
import { toExternal, type ExternalEvent } from './external.js';
import { activeAt, webhooksStream, type SubscriptionsView } from './subscription.decider.js';

/** The consumer group that turns domain events into deliveries. */
export const projectorGroup = 'webhook-projector';

export interface ProjectorDeps {
  eventStore: EventStore;
  clock: Clock;
  deliverer: Deliverer;
  subscriptions: (stream: string) => Promise<SubscriptionsView>;
}

const systemContext = systemContextOf('system:webhooks');

/**
 * The webhook projector, a persistent-subscription consumer: maps each domain event to external ones and
 * schedules a delivery per subscription that was active when the event happened. Where the subscription
 * has a slot free, the scheduling append also claims the first attempt, which then starts at once.
 */
export const webhookProjector = ({ eventStore, clock, deliverer, subscriptions }: ProjectorDeps) => {
  /** Appends the delivery's schedule (and claim); null when it was scheduled before (a redelivered event). */
  const append = async (
    tenantId: string,
    webhookId: string,
    external: ExternalEvent,
    causationId: string,
    claim?: Claimant,
  ): Promise<CommandResult<DeliveryState, DeliveryEvent> | null> => {
    const deliveryId = deliveryIdFor(webhookId, external.id);
    try {
      // The delivery's id is derived from the subscription and the event, so its stream is new unless the
      // event was delivered before: decided on the empty stream without reading it (a round trip per
      // delivery), the append expecting no stream. One scheduled before refuses it, a race lost as below.
      const result = await handleCommandOn(
        eventStore,
        deliveryDecider,
        streamName('delivery', tenantId, deliveryId),
        { state: deliveryDecider.initialState(), version: NO_STREAM },
        {
          type: 'Schedule',
          identity: { deliveryId, webhookId, eventId: external.id, eventType: external.type },
          payload: external,
          now: clock(),
          ...(claim === undefined ? {} : { claim }),
        },
        systemContext(tenantId, clock(), causationId),
      );
      return result.events.length > 0 ? result : null;
    } catch (error) {
      if (lostRace(error)) return null;
      throw error;
    }
  };

  /** Schedules one delivery and sets its first attempt going: in a slot taken now, or queued for one. */
  const deliver = async (
    tenantId: string,
    webhookId: string,
    external: ExternalEvent,
    causationId: string,
  ) => {
    const reservation = deliverer.reserve(tenantId, webhookId);
    let scheduled;
    try {
      scheduled = await append(tenantId, webhookId, external, causationId, reservation?.claim);
    } catch (error) {
      reservation?.release();
      throw error;
    }
    if (!scheduled) return reservation?.release();
    if (reservation) reservation.start(tenantId, scheduled);
    else deliverer.kick(tenantId, deliveryIdFor(webhookId, external.id), webhookId);
  };

  /** The group's handler. The deliveries of one event are appended together, so they share a commit. */
  const project = async (event: RecordedEvent): Promise<ConsumerOutcome> => {
    const externals = toExternal(event);
    if (externals.length === 0) return { kind: 'ack' };
    const tenantId = event.metadata.tenantId;
    const entries = activeAt(await subscriptions(webhooksStream(tenantId)), event.position);
    await Promise.all(
      externals.flatMap((external) =>
        entries
          .filter((entry) => entry.subscription.events.includes(external.type))
          .map((entry) => deliver(tenantId, entry.subscription.id, external, event.id)),
      ),
    );
    return { kind: 'ack' };
  };

  /** Schedules one delivery for the API's replay of missed events; the delivery id, or null as above. */
  const schedule = async (
    tenantId: string,
    webhookId: string,
    external: ExternalEvent,
    causationId: string,
  ): Promise<string | null> =>
    (await append(tenantId, webhookId, external, causationId)) ? deliveryIdFor(webhookId, external.id) : null;

  return { project, schedule };
};
