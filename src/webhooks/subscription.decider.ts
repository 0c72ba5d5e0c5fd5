import type { Decider, DomainEvent, Envelope } from '../core/decider.js';
import { ConflictError, NotFoundError } from '../core/errors.js';
import type { RecordedEvent } from '../core/events.js';
import { streamName } from '../core/streams.js';
import type { WebhookOwner } from './creator.js';
import type { ExternalEventType } from './external.js';

/**
 * A tenant's webhook subscriptions are one aggregate, in one stream: the per-tenant cap is then an
 * invariant the expected-version append enforces, not a count that two requests could both pass.
 */
export const webhooksStream = (tenantId: string): string => streamName('webhooks', tenantId, 'set');

export interface WebhookSubscription {
  id: string;
  tenantId: string;
  url: string;
  events: ExternalEventType[];
  status: 'active' | 'paused' | 'disabled';
  disabledReason: string | null;
  disabledAt: string | null;
  /** When a user paused it; null unless paused. */
  pausedAt: string | null;
  createdAt: string;
}

interface Entry {
  subscription: WebhookSubscription;
  /** The secret, sealed (secret-box.ts): events never hold it in the clear. */
  sealedSecret: string;
  /** The secret before the last rotation, which signs beside the new one until `previousSecretExpiresAt`. */
  previousSealedSecret: string | null;
  previousSecretExpiresAt: string | null;
  /** Global position of the event that created it, and of its last disable: which events it may receive. */
  createdAtPosition: number;
  disabledAtPosition: number | null;
  /** Global position of its last pause: a resume delivers what happened from there on. */
  pausedAtPosition: number | null;
  /** The delivery whose retries ran out and so disabled it, when that was the cause: a replay sends it again. */
  disabledByDelivery: string | null;
  /**
   * Who it acts for: the credential that created it, or enabled it last. Events from before this was
   * recorded name the credential as their actor, with `scopes: null` (see creator.ts).
   */
  owner: WebhookOwner;
}

export interface WebhooksState {
  /** By webhook id, without a prototype: read it only through `entryOf`, never `entries[id]`. */
  entries: Record<string, Entry>;
}

/**
 * The subscription with this id, if the stream has one. An own-property check, so that an id from a path
 * such as `__proto__`, `constructor` or `toString` names nothing rather than something of Object.prototype.
 */
export const entryOf = (state: WebhooksState, webhookId: string): Entry | undefined =>
  Object.hasOwn(state.entries, webhookId) ? state.entries[webhookId] : undefined;

const noEntries = (): Record<string, Entry> => Object.create(null) as Record<string, Entry>;

export type WebhookEvent =
  | DomainEvent<
      'WebhookSubscribed',
      {
        webhookId: string;
        url: string;
        events: ExternalEventType[];
        sealedSecret: string;
        owner?: WebhookOwner;
      }
    >
  | DomainEvent<'WebhookDeleted', { webhookId: string }>
  | DomainEvent<'WebhookDisabled', { webhookId: string; reason: string; deliveryId?: string }>
  | DomainEvent<'WebhookEnabled', { webhookId: string; replayMissed: boolean; owner?: WebhookOwner }>
  | DomainEvent<'WebhookPaused', { webhookId: string }>
  | DomainEvent<'WebhookResumed', { webhookId: string }>
  | DomainEvent<'WebhookDisableNotified', { webhookId: string; to: string; messageId: string }>
  | DomainEvent<
      'WebhookSecretRotated',
      { webhookId: string; sealedSecret: string; previousSecretExpiresAt: string }
    >;

export type WebhookCommand =
  | {
      type: 'Subscribe';
      webhookId: string;
      url: string;
      events: ExternalEventType[];
      sealedSecret: string;
      max: number;
      owner: WebhookOwner;
    }
  | { type: 'Delete'; webhookId: string }
  | { type: 'Disable'; webhookId: string; reason: string; deliveryId?: string }
  | { type: 'Enable'; webhookId: string; replayMissed: boolean; owner: WebhookOwner }
  | { type: 'Pause'; webhookId: string }
  | { type: 'Resume'; webhookId: string }
  | { type: 'RecordNotification'; webhookId: string; to: string; messageId: string }
  | { type: 'RotateSecret'; webhookId: string; sealedSecret: string; previousSecretExpiresAt: Date };

const existing = (state: WebhooksState, webhookId: string): Entry => {
  const entry = entryOf(state, webhookId);
  if (!entry) throw new NotFoundError('No such webhook subscription');
  return entry;
};

const decide = (command: WebhookCommand, state: WebhooksState): WebhookEvent[] => {
  switch (command.type) {
    case 'Subscribe': {
      if (Object.keys(state.entries).length >= command.max) {
        throw new ConflictError(
          `A tenant may have at most ${command.max} webhook subscriptions; delete one before creating another`,
        );
      }
      const { webhookId, url, events, sealedSecret, owner } = command;
      return [{ type: 'WebhookSubscribed', data: { webhookId, url, events, sealedSecret, owner } }];
    }
    case 'Delete':
      existing(state, command.webhookId);
      return [{ type: 'WebhookDeleted', data: { webhookId: command.webhookId } }];
    case 'Disable': {
      if (existing(state, command.webhookId).subscription.status === 'disabled') return [];
      const { webhookId, reason, deliveryId } = command;
      return [
        {
          type: 'WebhookDisabled',
          data: { webhookId, reason, ...(deliveryId === undefined ? {} : { deliveryId }) },
        },
      ];
    }
    case 'Enable': {
      const { status } = existing(state, command.webhookId).subscription;
      // Enabling would drop what the pause holds back: only a resume delivers it.
      if (status === 'paused') throw new ConflictError('The subscription is paused: resume it instead');
      return status === 'active'
        ? []
        : [
            {
              type: 'WebhookEnabled',
              data: {
                webhookId: command.webhookId,
                replayMissed: command.replayMissed,
                owner: command.owner,
              },
            },
          ];
    }
    case 'Pause': {
      const { status } = existing(state, command.webhookId).subscription;
      if (status === 'disabled')
        throw new ConflictError('The subscription is disabled: enable it before pausing it');
      return status === 'paused' ? [] : [{ type: 'WebhookPaused', data: { webhookId: command.webhookId } }];
    }
    case 'Resume': {
      const { status } = existing(state, command.webhookId).subscription;
      if (status === 'disabled')
        throw new ConflictError('The subscription is disabled, not paused: enable it instead');
      return status === 'active' ? [] : [{ type: 'WebhookResumed', data: { webhookId: command.webhookId } }];
    }
    case 'RecordNotification': {
      existing(state, command.webhookId);
      const { webhookId, to, messageId } = command;
      return [{ type: 'WebhookDisableNotified', data: { webhookId, to, messageId } }];
    }
    case 'RotateSecret': {
      existing(state, command.webhookId);
      const { webhookId, sealedSecret } = command;
      const previousSecretExpiresAt = command.previousSecretExpiresAt.toISOString();
      return [{ type: 'WebhookSecretRotated', data: { webhookId, sealedSecret, previousSecretExpiresAt } }];
    }
  }
};

/** One subscription's own transitions: shared by the aggregate and the list's read model. */
export const evolveSubscription = (
  current: WebhookSubscription | null,
  event: Envelope<WebhookEvent>,
): WebhookSubscription | null => {
  const at = event.metadata.occurredAt;
  switch (event.type) {
    case 'WebhookSubscribed':
      return {
        id: event.data.webhookId,
        tenantId: event.metadata.tenantId,
        url: event.data.url,
        events: event.data.events,
        status: 'active',
        disabledReason: null,
        disabledAt: null,
        pausedAt: null,
        createdAt: at,
      };
    case 'WebhookDeleted':
      return null;
    case 'WebhookDisabled':
      return (
        current && {
          ...current,
          status: 'disabled',
          disabledReason: event.data.reason,
          disabledAt: at,
          pausedAt: null,
        }
      );
    case 'WebhookPaused':
      return current && { ...current, status: 'paused', pausedAt: at };
    case 'WebhookResumed':
      return current && { ...current, status: 'active', pausedAt: null };
    case 'WebhookEnabled':
      return current && { ...current, status: 'active', disabledReason: null, disabledAt: null };
    case 'WebhookDisableNotified':
    case 'WebhookSecretRotated':
      return current;
  }
};

/** The owner an event leaves: a subscribe or an enable names its actor; older ones did not record scopes. */
const ownerAfter = (entry: Entry | undefined, event: Envelope<WebhookEvent>): WebhookOwner => {
  if (event.type === 'WebhookSubscribed' || event.type === 'WebhookEnabled')
    return event.data.owner ?? entry?.owner ?? { actor: event.metadata.actor, scopes: null };
  return entry?.owner ?? { actor: event.metadata.actor, scopes: null };
};

/** The secrets an event leaves: a rotation keeps the one it replaces, for the grace period it names. */
const secretsAfter = (
  entry: Entry | undefined,
  event: Envelope<WebhookEvent>,
): Pick<Entry, 'sealedSecret' | 'previousSealedSecret' | 'previousSecretExpiresAt'> => {
  if (event.type === 'WebhookSubscribed')
    return {
      sealedSecret: event.data.sealedSecret,
      previousSealedSecret: null,
      previousSecretExpiresAt: null,
    };
  if (event.type === 'WebhookSecretRotated')
    return {
      sealedSecret: event.data.sealedSecret,
      previousSealedSecret: entry?.sealedSecret ?? null,
      previousSecretExpiresAt: event.data.previousSecretExpiresAt,
    };
  return {
    sealedSecret: entry?.sealedSecret ?? '',
    previousSealedSecret: entry?.previousSealedSecret ?? null,
    previousSecretExpiresAt: entry?.previousSecretExpiresAt ?? null,
  };
};

/**
 * Where what a subscription missed starts: its disable, or the pause it was disabled in (whatever the pause
 * held back is then what an enable with `replayMissed` delivers).
 */
const disabledAtPositionAfter = (
  entry: Entry | undefined,
  event: Envelope<WebhookEvent>,
  position: number,
): number | null => {
  if (event.type !== 'WebhookDisabled') return entry?.disabledAtPosition ?? null;
  return entry?.subscription.status === 'paused' ? (entry.pausedAtPosition ?? position) : position;
};

/** Positions are only known once events are stored; evolve sees them when folding recorded events. */
type PositionedEnvelope = Envelope<WebhookEvent> & { position?: number };

const evolve = (state: WebhooksState, event: PositionedEnvelope): WebhooksState => {
  const { webhookId } = event.data;
  const entry = entryOf(state, webhookId);
  const subscription = evolveSubscription(entry?.subscription ?? null, event);
  const others = Object.assign(noEntries(), state.entries);
  delete others[webhookId];
  if (!subscription) return { entries: others };
  const position = event.position ?? Number.MAX_SAFE_INTEGER;
  return {
    entries: Object.assign(others, {
      [webhookId]: {
        subscription,
        ...secretsAfter(entry, event),
        createdAtPosition:
          event.type === 'WebhookSubscribed' ? position : (entry?.createdAtPosition ?? position),
        disabledAtPosition: disabledAtPositionAfter(entry, event, position),
        pausedAtPosition: event.type === 'WebhookPaused' ? position : (entry?.pausedAtPosition ?? null),
        disabledByDelivery:
          event.type === 'WebhookDisabled'
            ? (event.data.deliveryId ?? null)
            : (entry?.disabledByDelivery ?? null),
        owner: ownerAfter(entry, event),
      },
    }),
  };
};

export const webhooksDecider: Decider<WebhooksState, WebhookCommand, WebhookEvent> = {
  aggregate: 'webhooks',
  initialState: () => ({ entries: noEntries() }),
  decide,
  evolve,
};

export const webhookEventTypes: readonly WebhookEvent['type'][] = [
  'WebhookSubscribed',
  'WebhookDeleted',
  'WebhookDisabled',
  'WebhookEnabled',
  'WebhookDisableNotified',
  'WebhookSecretRotated',
  'WebhookPaused',
  'WebhookResumed',
];

/**
 * Folds stored events, with each one's global position, which the creation and disable record: the whole
 * stream, or the events after those `from` was folded from.
 */
export const foldRecorded = (
  recorded: readonly RecordedEvent[],
  from: WebhooksState = webhooksDecider.initialState(),
): WebhooksState =>
  recorded.reduce(
    (state, event) =>
      evolve(state, {
        ...(event as unknown as WebhookEvent),
        metadata: event.metadata,
        streamVersion: event.streamVersion,
        position: event.position,
      }),
    from,
  );

const active = (state: WebhooksState): WebhookEntry[] =>
  Object.values(state.entries).filter((entry) => entry.subscription.status === 'active');

/** The active subscriptions as they stood just before `position`: who should receive the event stored there. */
export const subscriptionsAt = (recorded: readonly RecordedEvent[], position: number): WebhookEntry[] =>
  active(foldRecorded(recorded.filter((event) => event.position < position)));

/** A tenant's subscriptions stream as the workers keep it: its events, and their fold. */
export interface SubscriptionsView {
  recorded: readonly RecordedEvent[];
  state: WebhooksState;
}

export const subscriptionsView = {
  empty: { recorded: [], state: webhooksDecider.initialState() } as SubscriptionsView,
  extend: (view: SubscriptionsView, newer: readonly RecordedEvent[]): SubscriptionsView => ({
    recorded: [...view.recorded, ...newer],
    state: foldRecorded(newer, view.state),
  }),
};

/**
 * subscriptionsAt on a view: nearly always nothing changed after the event, and the fold in hand is the
 * answer; otherwise the events before it are folded again.
 */
export const activeAt = (view: SubscriptionsView, position: number): WebhookEntry[] =>
  (view.recorded.at(-1)?.position ?? 0) < position
    ? active(view.state)
    : subscriptionsAt(view.recorded, position);

export type WebhookEntry = Entry;
