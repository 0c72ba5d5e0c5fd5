import pg from 'pg';
import type { Appended, AppendSignal } from './append-signal.js';

/** The channel append_events notifies on commit (src/eventstore/postgres-schema.ts). */
export const appendedChannel = 'events_appended';

/**
 * A wake-up that says only "something was appended, somewhere": subscribers read from their position,
 * whatever it holds (the payload of a notification says nothing they could skip on).
 */
export const somethingAppended: Appended = { types: new Set(), firstPosition: 0, lastPosition: 0 };

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
    mine.on('notification', () => signal.notify(somethingAppended));
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
