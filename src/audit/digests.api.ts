import Router from '@koa/router';
import { NotFoundError, ValidationError } from '../core/errors.js';
import type { RecordedEvent } from '../core/events.js';
import type { EventStore } from '../eventstore/port.js';
import type { Keyring } from '../auth/signing-keys.js';
import { decodeOrThrow, singleParam, strictObject, wholeNumberParam } from '../http/codec.js';
import type { CursorCodec } from '../http/cursor.js';
import { requireScope, type Authenticator } from '../http/guard.js';
import { ListParams, pageOf } from '../http/paging.js';
import { pathParam } from '../http/resource.js';
import type { AuditDigest } from './digest.js';
import { consistencyProof, digestView, inclusionProof, type LogBound } from './proofs.js';
import { tenantSlots } from './tenant-slots.js';

export interface DigestsApiDeps {
  eventStore: EventStore;
  auth: Authenticator;
  cursors: CursorCodec;
  keyring: () => Keyring;
}

const maxTreeSize = Number.MAX_SAFE_INTEGER;
/** Event ids are UUIDs; anything of their alphabet is looked for, and not found. */
const eventIdPattern = /^[A-Za-z0-9_-]{1,100}$/;

export const InclusionQuery = strictObject(
  'inclusion proof parameters',
  {
    eventId: singleParam(
      'an event id',
      (s) => (eventIdPattern.test(s) ? s : undefined),
      'must be the id of an event of the tenant',
      { type: 'string', minLength: 1, maxLength: 100, pattern: eventIdPattern.source },
    ),
  },
  { size: wholeNumberParam(1, maxTreeSize) },
);
export const ConsistencyQuery = strictObject(
  'consistency proof parameters',
  { from: wholeNumberParam(1, maxTreeSize), to: wholeNumberParam(1, maxTreeSize) },
  {},
);

/** The tenant's digest events, newest first: the store filters them by tenant and type. */
const digestPage = (eventStore: EventStore, tenantId: string, before: number | undefined, maxCount: number) =>
  eventStore.readAllBackward({
    ...(before === undefined ? {} : { before }),
    maxCount,
    filter: { tenantId, eventTypes: ['AuditDigestRecorded'] },
  });

const viewOf = (tenantId: string, event: RecordedEvent) =>
  digestView(tenantId, event.data as AuditDigest, event.metadata.occurredAt);

/** The newest signed (version 2) digest's tree: proofs are given up to its size. */
const latestBound = async (eventStore: EventStore, tenantId: string): Promise<LogBound> => {
  for (let before: number | undefined; ;) {
    const page = await digestPage(eventStore, tenantId, before, 100);
    const signed = page.events.map((event) => event.data as AuditDigest).find((digest) => digest.log);
    if (signed?.log) return { size: signed.log.size, upToPosition: signed.upToPosition };
    if (page.isStart)
      throw new NotFoundError('The tenant has no signed digest yet: there is no tree to prove against');
    before = page.lastPosition;
  }
};

const cursorKey = (tenantId: string) => JSON.stringify(['audit-digests', tenantId]);

/**
 * The tenant's signed digests and the RFC 9162 proofs against them (docs/auditors.md#6-digests-and-proofs),
 * for admins; and, for anyone, the public keys that verify the digests' signatures.
 */
export const digestsApi = (deps: DigestsApiDeps): Router[] => {
  const router = new Router({ prefix: '/v1/tenants/:tenantId/audit' });
  const admin = requireScope(deps.auth, 'admin');
  // A proof reads the tenant's events up to the tree's size: seconds at a million (docs/auditors.md).
  const slot = tenantSlots(2, 'proof');

  router.get('/digests', admin, async (ctx) => {
    const tenantId = pathParam(ctx, 'tenantId');
    const { limit, cursor } = pageOf(decodeOrThrow(ListParams, ctx.query));
    let before: number | undefined;
    if (cursor !== undefined) {
      const { value } = deps.cursors.decode(cursor, cursorKey(tenantId));
      if (typeof value !== 'number')
        throw new ValidationError([{ path: 'cursor', message: 'is not a digest cursor' }]);
      before = value;
    }
    const page = await digestPage(deps.eventStore, tenantId, before, limit + 1);
    const events = page.events.slice(0, limit);
    const last = events.at(-1);
    ctx.body = {
      data: events.map((event) => viewOf(tenantId, event)),
      nextCursor:
        page.events.length > limit && last
          ? deps.cursors.encode({ value: last.position, id: 'digests' }, cursorKey(tenantId))
          : null,
    };
  });

  router.get('/digests/latest', admin, async (ctx) => {
    const tenantId = pathParam(ctx, 'tenantId');
    const [latest] = (await digestPage(deps.eventStore, tenantId, undefined, 1)).events;
    if (!latest) throw new NotFoundError('The tenant has no digest yet');
    ctx.body = viewOf(tenantId, latest);
  });

  router.get('/proofs/inclusion', admin, async (ctx) => {
    const tenantId = pathParam(ctx, 'tenantId');
    const query = decodeOrThrow(InclusionQuery, ctx.query);
    const { eventId } = query;
    const bound = await latestBound(deps.eventStore, tenantId);
    ctx.body = await slot(tenantId, () =>
      inclusionProof(deps.eventStore, tenantId, eventId, query.size ?? bound.size, bound),
    );
  });

  router.get('/proofs/consistency', admin, async (ctx) => {
    const tenantId = pathParam(ctx, 'tenantId');
    const query = decodeOrThrow(ConsistencyQuery, ctx.query);
    const { from, to } = query;
    const bound = await latestBound(deps.eventStore, tenantId);
    ctx.body = await slot(tenantId, () => consistencyProof(deps.eventStore, tenantId, from, to, bound));
  });

  const wellKnown = new Router();
  wellKnown.get('/.well-known/digest-keys.json', (ctx) => {
    ctx.set('Cache-Control', 'public, max-age=300');
    ctx.body = deps.keyring().digestJwks;
  });

  return [router, wellKnown];
};
