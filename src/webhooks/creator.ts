import { grants, type Scope } from '../core/scopes.js';
import { readAggregate } from '../core/command-handler.js';
import { ForbiddenError } from '../core/errors.js';
import { streamName } from '../core/streams.js';
import { apiKeyDecider, oauthClientDecider } from '../credentials/secret-credential.decider.js';
import { userDecider } from '../credentials/user.decider.js';
import type { WholeStreamReader } from '../eventstore/port.js';
import type { ExternalEventType } from './external.js';

/**
 * A subscription hands its receiver the data of the events it lists, so it may list only what its owner may
 * read: the read scope of each event type's data. `webhooks:manage` alone reads nothing.
 */
export const scopeOfEventType: Readonly<Record<ExternalEventType, Scope>> = {
  'observation.created': 'observations:read',
  'observation.updated': 'observations:read',
  'visit.submitted': 'observations:read',
  'cv.job.completed': 'cv:read',
  'cv.job.failed': 'cv:read',
};

/**
 * Who a subscription acts for: the credential that created it (or enabled it last), as the actor of its
 * events names it (`apikey:<id>`, `user:<id>`, `client:<id>`), and the scopes it held then. A token may be
 * narrower than its user or client, so the scopes are recorded; subscriptions created before they were
 * have `null`, and are judged by the credential's scopes alone.
 */
export interface WebhookOwner {
  actor: string;
  scopes: Scope[] | null;
}

/** The first event type the scopes do not allow, with the scope it needs. */
export const missingScope = (
  held: readonly Scope[],
  events: readonly ExternalEventType[],
): { type: ExternalEventType; scope: Scope } | undefined => {
  const type = events.find((candidate) => !grants(held, scopeOfEventType[candidate]));
  return type && { type, scope: scopeOfEventType[type] };
};

/** At creation and enabling: 403 naming the scope the caller lacks for one of the listed types. */
export const assertMaySubscribe = (held: readonly Scope[], events: readonly ExternalEventType[]): void => {
  const missing = missingScope(held, events);
  if (missing) {
    throw new ForbiddenError(
      `Subscribing to ${missing.type} needs the scope ${missing.scope}, which its data is read with`,
      missing.scope,
    );
  }
};

/** The credential behind an actor, as it stands now: its scopes, or why it holds none any more. */
const credentialNow = async (
  eventStore: WholeStreamReader,
  tenantId: string,
  actor: string,
): Promise<{ scopes: readonly Scope[] } | { lost: string }> => {
  const [kind, id] = actor.split(':');
  if (!id) return { lost: `its owner ${actor} is no credential` };
  if (kind === 'user') {
    const { state } = await readAggregate(eventStore, userDecider, streamName('user', tenantId, id));
    if (state.status === 'absent') return { lost: `the user ${id} does not exist` };
    if (state.user.status !== 'active') return { lost: `the user ${id} was disabled` };
    return { scopes: state.user.scopes };
  }
  if (kind === 'apikey' || kind === 'client') {
    const { state } =
      kind === 'apikey'
        ? await readAggregate(eventStore, apiKeyDecider, streamName('apikey', tenantId, id))
        : await readAggregate(eventStore, oauthClientDecider, streamName('oauthclient', tenantId, id));
    const what = kind === 'apikey' ? 'API key' : 'OAuth client';
    if (state.status === 'absent') return { lost: `the ${what} ${id} does not exist` };
    if (state.credential.status !== 'active') return { lost: `the ${what} ${id} was revoked` };
    return { scopes: state.credential.scopes };
  }
  return { lost: `its owner ${actor} is no credential` };
};

/**
 * Checked before every attempt: whether the owner may still read what the event type carries. The reason
 * to disable the subscription when not (its credential was revoked, disabled, or holds fewer scopes), or
 * null when it may.
 */
export const ownerLacksScope = async (
  eventStore: WholeStreamReader,
  tenantId: string,
  owner: WebhookOwner,
  eventType: ExternalEventType,
): Promise<string | null> => {
  const scope = scopeOfEventType[eventType];
  const now = await credentialNow(eventStore, tenantId, owner.actor);
  const because =
    'lost' in now
      ? now.lost
      : !grants(now.scopes, scope) || (owner.scopes !== null && !grants(owner.scopes, scope))
        ? `${owner.actor} does not hold it`
        : null;
  return because === null
    ? null
    : `Its owner may no longer read ${eventType} (the scope ${scope}): ${because}. Enable it again with a credential that holds the scope`;
};
