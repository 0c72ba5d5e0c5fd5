import pg from 'pg';
import type { Appended, AppendSignal, Unread } from './append-signal.js';

/** The channel append_events notifies on commit (src/eventstore/postgres-schema.ts). */
export const appendedChannel = 'events_appended';

/**
 * A wake-up that says only "something was appended, somewhere": subscribers read from their position,
 * whatever it holds.
 */
export const somethingAppended: Appended = { types: new Set(), firstPosition: 0, lastPosition: 0 };

/** What a notification says one commit appended: positions after `after` up to `last`, of these types. */
export const appendedOf = (payload: string | undefined): Appended => {
  try {
    const { after, last, types } = JSON.parse(payload ?? '') as {
      after: unknown;
      last: unknown;
      types: unknown;
    };
    if (typeof after !== 'number' || typeof last !== 'number' || !Array.isArray(types))
      return somethingAppended;
    return { types: new Set(types.map(String)), firstPosition: after, lastPosition: last };
  } catch {
    return somethingAppended;
  }
};

/**
 * Where a catch-up subscriber at `position` stands after a wake-up, read nothing: past the commit when it
 * had read everything up to the commit's first position and the commit holds none of its types. A commit's
 * positions are its own, taken together (postgres-schema.ts), so nothing else can appear among them.
 */
export const skipUnreadCommit = (
  appended: Appended | null,
  position: number,
  eventTypes: readonly string[] | undefined,
): Unread =>
  appended !== null &&
  appended !== somethingAppended &&
  eventTypes !== undefined &&
  position >= appended.firstPosition &&
  !eventTypes.some((type) => appended.types.has(type))
    ? { position: Math.max(position, appended.lastPosition), mustRead: false }
    : { position, mustRead: true };

export interface Listener {
  close(): Promise<void>;
}

/**
 * LISTENs for appends by any process on its own connection (outside the pool) and wakes the signal. Only a
 * hint: a lost connection is opened again after `retryMs`, and subscribers poll meanwhile, so a missed
 * notification delays an event by at most one polling interval. Never throws; a connection error is not
 * the subscribers' failure.
 */
export const listenForAppends = (url: string, signal: AppendSignal, retryMs = 1000): Listener => {
  let closed = false;
  let client: pg.Client | null = null;
  let retry: NodeJS.Timeout | null = null;

  const again = () => {
    client = null;
    if (closed || retry) return;
    retry = setTimeout(() => {
      retry = null;
      void connect();
    }, retryMs);
    retry.unref();
  };

  const connect = async () => {
    const mine = new pg.Client({ connectionString: url, application_name: 'observation-service listener' });
    client = mine;
    mine.on('error', () => undefined);
    mine.on('end', () => {
      if (client === mine) again();
    });
    mine.on('notification', (message) => signal.notify(appendedOf(message.payload)));
    try {
      await mine.connect();
      await mine.query(`LISTEN ${appendedChannel}`);
      if (closed) await mine.end();
      // Appends made while it was not listening: subscribers read once more.
      else signal.notify(somethingAppended);
    } catch {
      await mine.end().catch(() => undefined);
      if (client === mine) again();
    }
  };

  void connect();
  return {
    close: async () => {
      closed = true;
      if (retry) clearTimeout(retry);
      const last = client;
      client = null;
      await last?.end().catch(() => undefined);
    },
  };
};
