import { Readable } from 'node:stream';
import Router from '@koa/router';
import type { Context } from 'koa';
import type { Logger } from 'pino';
import { requireScope, type Authenticator } from '../http/guard.js';
import { toEnvelope } from '../core/command-handler.js';
import { fold } from '../core/decider.js';
import { NotFoundError, ValidationError } from '../core/errors.js';
import type { RecordedEvent } from '../core/events.js';
import { streamName } from '../core/streams.js';
import type { EventFilter, EventStore, ReadAllPage } from '../eventstore/port.js';
import { decodeOrThrow } from '../http/codec.js';
import type { CursorCodec } from '../http/cursor.js';
import { pathParam, sendResource } from '../http/resource.js';
import { observationDecider } from '../observations/decider.js';
import type { ObservationEvent, ObservationState } from '../observations/observation.js';
import { exportedEvent, previousHashes } from './export.js';
import { defaultPageLimit, EventHistoryQuery, maxPageLimit, type EventHistoryParams } from './codecs.js';

export interface HistoryApiDeps {
  eventStore: EventStore;
  cursors: CursorCodec;
  auth: Authenticator;
}

/** How many events one read from the store asks for when the route filters them further itself. */
const storePageSize = 1000;
/** A JSON page stops after scanning this many events, so that a narrow time filter never scans for long. */
const scanBudget = 10_000;

export const ndjsonType = 'application/x-ndjson';

/** Response headers of an NDJSON download: it holds the matching events after `after`, up to `head`. */
export const exportRangeHeaders = { after: 'Export-After-Position', head: 'Export-Head-Position' } as const;

interface HistoryQuery {
  tenantId: string;
  types: string[] | undefined;
  stream: string | undefined;
  /** Inclusive bounds on metadata.occurredAt, in milliseconds. */
  from: number | undefined;
  to: number | undefined;
  newestFirst: boolean;
}

/** What the store filters (by index on SQLite): the tenant, the types, and the stream as a prefix. */
const storeFilter = (query: HistoryQuery): EventFilter => ({
  tenantId: query.tenantId,
  ...(query.types ? { eventTypes: query.types } : {}),
  ...(query.stream ? { streamPrefixes: [query.stream] } : {}),
});

const filtersHere = (query: HistoryQuery): boolean =>
  query.stream !== undefined || query.from !== undefined || query.to !== undefined;

/**
 * What the route filters itself, within each page: the exact stream, and the time. Positions are the
 * order; time is only a filter, since clocks of several writers need not agree with commit order.
 */
const keeps =
  (query: HistoryQuery) =>
  (event: RecordedEvent): boolean => {
    if (query.stream !== undefined && event.streamName !== query.stream) return false;
    if (query.from === undefined && query.to === undefined) return true;
    const at = Date.parse(event.metadata.occurredAt);
    return (query.from === undefined || at >= query.from) && (query.to === undefined || at <= query.to);
  };

/** The cursor is bound to the tenant and the filters: it resumes this query, and no other. */
const cursorKey = (query: HistoryQuery): string =>
  JSON.stringify([
    'events',
    query.tenantId,
    query.types ?? null,
    query.stream ?? null,
    query.from ?? null,
    query.to ?? null,
    // Only when newest first, so that the cursors of commit order handed out before it existed still work.
    ...(query.newestFirst ? ['desc'] : []),
  ]);

/** One store page in the query's order, from an exclusive position (absent: the first or the newest). */
type PageReader = (
  from: number | undefined,
  maxCount: number,
) => Promise<{ events: RecordedEvent[]; resumeFrom: number; ended: boolean }>;

const pageReader = (eventStore: EventStore, query: HistoryQuery): PageReader => {
  const filter = storeFilter(query);
  if (query.newestFirst) {
    return async (before, maxCount) => {
      const page = await eventStore.readAllBackward({ ...(before ? { before } : {}), maxCount, filter });
      return { events: page.events, resumeFrom: page.lastPosition, ended: page.isStart };
    };
  }
  return async (after = 0, maxCount) => {
    const page = await eventStore.readAll({ after, maxCount, filter });
    const ended = page.isEnd || page.lastPosition <= after;
    return { events: page.events, resumeFrom: page.lastPosition, ended };
  };
};

/**
 * Reads store pages until `limit` events passed the filters, the store ended, or the scan budget ran out.
 * It looks for one event more than the limit, so that a page that ends the history says so (next: null).
 */
const readJsonPage = async (
  eventStore: EventStore,
  query: HistoryQuery,
  start: number | undefined,
  limit: number,
): Promise<{ events: RecordedEvent[]; next: number | null }> => {
  const keep = keeps(query);
  const read = pageReader(eventStore, query);
  const maxCount = filtersHere(query) ? storePageSize : limit + 1;
  const events: RecordedEvent[] = [];
  const full = () => ({ events, next: events[limit - 1]!.position });
  let from = start;
  let scanned = 0;
  for (;;) {
    const page = await read(from, maxCount);
    for (const event of page.events) {
      if (!keep(event)) continue;
      if (events.length === limit) return full();
      events.push(event);
    }
    if (page.ended) return { events, next: null };
    if (events.length === limit) return full();
    from = page.resumeFrom;
    scanned += page.events.length;
    if (scanned >= scanBudget) return { events, next: from };
  }
};

/**
 * Every matching event from `first` on, up to the store's head when the request arrived, as NDJSON: one
 * chunk per store page, read only when the response has room for it (Readable.from pulls on demand), so
 * any number of events goes out in constant memory. When the client goes away, the response stream is
 * destroyed, the generator is returned, and no further page is read.
 */
async function* ndjsonLines(
  eventStore: EventStore,
  query: HistoryQuery,
  first: ReadAllPage,
  start: number,
  head: number,
  cap: number,
  logger: Logger,
): AsyncGenerator<string> {
  const keep = keeps(query);
  const previousOf = previousHashes(eventStore);
  let page = first;
  let after = start;
  let sent = 0;
  try {
    for (;;) {
      const kept: RecordedEvent[] = [];
      let done = false;
      for (const event of page.events) {
        if (event.position > head) {
          done = true;
          break;
        }
        if (!keep(event)) continue;
        kept.push(event);
        sent += 1;
        if (sent >= cap) {
          done = true;
          break;
        }
      }
      if (kept.length > 0) {
        const previous = await previousOf(kept);
        yield kept
          .map((event, index) => `${JSON.stringify(exportedEvent(event, previous[index]!))}\n`)
          .join('');
      }
      if (done || page.isEnd || page.lastPosition >= head || page.lastPosition <= after) return;
      after = page.lastPosition;
      page = await eventStore.readAll({
        after,
        maxCount: storePageSize,
        filter: storeFilter(query),
        raw: true,
      });
    }
  } catch (error) {
    // The status line is sent: the client sees the response cut off, not a clean end.
    logger.error({ err: error }, 'event history download failed');
    throw error;
  }
}

/** Where the page starts: after it in commit order, before it newest first (absent: at the newest). */
const startPosition = (
  cursors: CursorCodec,
  query: HistoryQuery,
  params: EventHistoryParams,
): number | undefined => {
  if (params.cursor !== undefined && params.after !== undefined) {
    throw new ValidationError([
      { path: 'after', message: 'cannot be given with cursor: the cursor already names a position' },
    ]);
  }
  if (query.newestFirst && params.after !== undefined)
    throw new ValidationError([
      { path: 'after', message: 'is for commit order: newest first pages by cursor' },
    ]);
  if (params.cursor === undefined) return query.newestFirst ? undefined : (params.after ?? 0);
  const { value } = cursors.decode(params.cursor, cursorKey(query));
  if (typeof value !== 'number')
    throw new ValidationError([{ path: 'cursor', message: 'is not a history cursor' }]);
  return value;
};

const queryOf = (ctx: Context, params: EventHistoryParams): HistoryQuery => {
  const query: HistoryQuery = {
    tenantId: pathParam(ctx, 'tenantId'),
    types: params.type,
    stream: params.stream,
    from: params.from === undefined ? undefined : Date.parse(params.from),
    to: params.to === undefined ? undefined : Date.parse(params.to),
    newestFirst: params.order === 'desc',
  };
  if (query.from !== undefined && query.to !== undefined && query.from > query.to)
    throw new ValidationError([{ path: 'to', message: 'must not be before from' }]);
  return query;
};

/** The state of an observation after each event of its stream, folded as the command handler folds. */
const observationVersions = (events: readonly RecordedEvent[]) => {
  let state: ObservationState = observationDecider.initialState();
  return events.map((event) => {
    state = fold(observationDecider, [toEnvelope<ObservationEvent>(event)], state);
    return {
      version: event.streamVersion,
      event: {
        id: event.id,
        type: event.type,
        data: event.data,
        metadata: event.metadata,
        position: event.position,
      },
      observation: state.status === 'recorded' ? state.observation : null,
    };
  });
};

export const historyApi = (deps: HistoryApiDeps): Router => {
  const router = new Router({ prefix: '/v1/tenants/:tenantId' });

  router.get('/events', requireScope(deps.auth, 'admin'), async (ctx) => {
    const params = decodeOrThrow(EventHistoryQuery, ctx.query);
    const query = queryOf(ctx, params);
    ctx.vary('Accept');

    if (ctx.accepts('application/json', ndjsonType) === ndjsonType) {
      if (query.newestFirst)
        throw new ValidationError([{ path: 'order', message: 'an NDJSON download is in commit order' }]);
      const start = startPosition(deps.cursors, query, params) ?? 0;
      const head = await deps.eventStore.headPosition();
      // The first page is read before the status line, so that a failing store still answers a problem.
      // As stored, not upcast: the form each event's hash covers.
      const first = await deps.eventStore.readAll({
        after: start,
        maxCount: storePageSize,
        filter: storeFilter(query),
        raw: true,
      });
      const lines = ndjsonLines(
        deps.eventStore,
        query,
        first,
        start,
        head,
        params.limit ?? Number.POSITIVE_INFINITY,
        ctx.state.logger,
      );
      ctx.status = 200;
      ctx.type = ndjsonType;
      // The range the download covers: the events after one position, up to the head when it started.
      ctx.set(exportRangeHeaders.after, String(start));
      ctx.set(exportRangeHeaders.head, String(head));
      ctx.body = Readable.from(lines, { objectMode: false });
      return;
    }

    const limit = params.limit ?? defaultPageLimit;
    if (limit > maxPageLimit) {
      throw new ValidationError([
        { path: 'limit', message: `must be a whole number from 1 to ${maxPageLimit}` },
      ]);
    }
    const page = await readJsonPage(
      deps.eventStore,
      query,
      startPosition(deps.cursors, query, params),
      limit,
    );
    const previous = await previousHashes(deps.eventStore)(page.events);
    ctx.body = {
      data: page.events.map((event, index) => exportedEvent(event, previous[index]!)),
      nextCursor:
        page.next === null ? null : deps.cursors.encode({ value: page.next, id: 'events' }, cursorKey(query)),
    };
  });

  router.get('/observations/:id/history', requireScope(deps.auth, 'observations:read'), async (ctx) => {
    const events = await deps.eventStore.readStream(
      streamName('observation', pathParam(ctx, 'tenantId'), pathParam(ctx, 'id')),
    );
    const last = events.at(-1);
    if (!last) throw new NotFoundError('The observation does not exist');
    sendResource(ctx, 200, observationVersions(events), { version: last.streamVersion, position: null });
  });

  return router;
};
