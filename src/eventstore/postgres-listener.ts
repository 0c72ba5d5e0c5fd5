import pg from 'pg';
import { newPool } from '../postgres/client.js';
import type { Appended, Unread } from './append-signal.js';

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
 * The commits this process heard of lately, its own at once and every process's through the notifications,
 * by the position just before their first event: what lets an idle catch-up subscriber move past commits
 * of only types it does not read without a query. Under load commits do not arrive in position order (16
 * appends in flight commit as they finish), so the wake-up a subscriber gets rarely starts where it stands;
 * but the commits heard before it usually fill the gap. A commit's positions are its own, taken together
 * (postgres-schema.ts), and it is heard only once committed, so a run of heard commits that follow on from
 * the subscriber's position leaves nothing else to appear among them. A gap (a commit not heard yet, still
 * running, or positions an append that failed took) stops the walk there: the subscriber waits for the
 * missing commit's wake-up, and reads at the latest when its polling interval is up.
 */
export class HeardCommits {
  private readonly byStart = new Map<number, Appended>();

  /** About a few seconds of commits at the rates measured; a walk that needs older ones reads instead. */
  constructor(private readonly capacity = 4096) {}

  record(appended: Appended): void {
    if (appended === somethingAppended) return;
    this.byStart.set(appended.firstPosition, appended);
    if (this.byStart.size > this.capacity) this.byStart.delete(this.byStart.keys().next().value as number);
  }

  /**
   * Where a catch-up subscriber at `position` that reads `eventTypes` stands after a wake-up, read nothing.
   * It must read after a wake-up that says nothing of what was appended (or no wake-up: its polling
   * interval), when it reads every type, and when a commit it has not read holds one of its types.
   */
  skip(appended: Appended | null, position: number, eventTypes: readonly string[] | undefined): Unread {
    const mustRead = { position, mustRead: true };
    if (appended === null || appended === somethingAppended || eventTypes === undefined) return mustRead;
    const holdsRead = (commit: Appended) => eventTypes.some((type) => commit.types.has(type));
    if (appended.lastPosition > position && holdsRead(appended)) return mustRead;
    let at = position;
    for (let commit = this.byStart.get(at); commit; commit = this.byStart.get(at)) {
      if (holdsRead(commit)) return { position: at, mustRead: true };
      at = commit.lastPosition;
    }
    return { position: at, mustRead: false };
  }
}

/** The channel each listening process announces itself on: when it starts listening, then every second. */
export const listenersChannel = 'events_listeners';
const announceEveryMs = 1000;

/**
 * Whether another process listens for appends, so that this one's commits are worth a NOTIFY: each NOTIFY
 * is a statement and a commit of its own, which every listening session then reads from the server's
 * queue, for nothing when this process is the only one listening (its own subscribers are told at once).
 * Each listening process announces itself when it starts listening and every `announceEveryMs`; one not
 * heard for `lostAfterMs` is taken as gone. Unsure means notify: while this process does not listen itself
 * (it hears no announcements), and for `lostAfterMs` after it starts, before every other process has had
 * the time to announce itself. A process that starts listening is told once, with a wake-up that says
 * nothing of what was appended, as soon as its announcement is heard, so that it reads what this process
 * committed unnotified meanwhile; between the two, it reads once after it started listening, and at the
 * latest after its polling interval.
 */
export class OtherListeners {
  private readonly lastHeard = new Map<number, number>();
  /** This process's listening session, and since when: null while it does not listen. */
  private own: { pid: number; since: number } | null = null;

  constructor(private readonly lostAfterMs = 3.5 * announceEveryMs) {}

  listening(pid: number, now = Date.now()): void {
    this.own = { pid, since: now };
  }

  stoppedListening(): void {
    this.own = null;
  }

  /** An announcement from the session `pid`: true when that one was not known to listen before. */
  announced(pid: number, now = Date.now()): boolean {
    if (pid === this.own?.pid) return false;
    const last = this.lastHeard.get(pid);
    this.lastHeard.set(pid, now);
    return last === undefined || now - last > this.lostAfterMs;
  }

  /** Whether a commit must be notified. */
  any(now = Date.now()): boolean {
    if (this.own === null || now - this.own.since < this.lostAfterMs) return true;
    for (const [pid, at] of this.lastHeard) {
      if (now - at <= this.lostAfterMs) return true;
      this.lastHeard.delete(pid);
    }
    return false;
  }
}

export interface Listener {
  close(): Promise<void>;
}

/**
 * LISTENs for appends by any process on its own connection (outside the pool) and tells `heard`; announces
 * itself to the other processes and tells `others` of theirs (OtherListeners), calling `newListener` when
 * one starts. Only a hint: a lost connection is opened again after `retryMs`, and subscribers poll
 * meanwhile, so a missed notification delays an event by at most one polling interval. Never throws; a
 * connection error is not the subscribers' failure.
 */
export const listenForAppends = (
  url: string,
  {
    heard,
    others,
    newListener,
  }: { heard: (appended: Appended) => void; others: OtherListeners; newListener: () => void },
  retryMs = 1000,
): Listener => {
  let closed = false;
  let client: pg.Client | null = null;
  let retry: NodeJS.Timeout | null = null;
  const announce = (on: pg.Client) => on.query(`NOTIFY ${listenersChannel}`);
  const announcing = setInterval(() => {
    if (client) void announce(client).catch(() => undefined);
  }, announceEveryMs);
  announcing.unref();

  const again = () => {
    client = null;
    others.stoppedListening();
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
    mine.on('notification', (message) => {
      if (message.channel === appendedChannel) heard(appendedOf(message.payload));
      else if (others.announced(message.processId)) newListener();
    });
    try {
      await mine.connect();
      await mine.query(`LISTEN ${appendedChannel}; LISTEN ${listenersChannel}`);
      if (closed) {
        await mine.end();
        return;
      }
      others.listening((mine as unknown as { processID: number }).processID);
      await announce(mine);
      // Appends made while it was not listening: subscribers read once more.
      heard(somethingAppended);
    } catch {
      await mine.end().catch(() => undefined);
      if (client === mine) again();
    }
  };

  void connect();
  return {
    close: async () => {
      closed = true;
      clearInterval(announcing);
      if (retry) clearTimeout(retry);
      const last = client;
      client = null;
      await last?.end().catch(() => undefined);
    },
  };
};

/**
 * Tells the other processes' subscribers what each commit holds. Not inside the append's transaction:
 * there, NOTIFY would serialize the commits of every append in the cluster (see append_events). After the
 * commit instead, and without holding the append up: on a connection of its own, so that no append waits
 * for a pool connection behind a wake-up, with the notifications waiting sent together, one statement at a
 * time, each still one commit's own. None while no other process listens (OtherListeners). A hint only:
 * subscribers poll too, so a lost one only delays them.
 */
export const appendNotifier = (url: string, others: OtherListeners) => {
  const notifier = newPool(url, 1, 'observation-service notifier');
  const waiting: string[] = [];
  let sending: Promise<void> | null = null;
  const sendWaiting = async () => {
    while (waiting.length > 0) {
      const payloads = waiting.splice(0);
      await notifier
        .query({
          name: 'notify_appended',
          text: 'SELECT pg_notify($1, payload) FROM unnest($2::text[]) AS payload',
          values: [appendedChannel, payloads],
        })
        .catch(() => undefined);
    }
    sending = null;
  };
  const send = (payload: string) => {
    waiting.push(payload);
    sending ??= sendWaiting();
  };
  return {
    wake: (appended: Appended) => {
      if (!others.any()) return;
      const payload = JSON.stringify({
        after: appended.firstPosition,
        last: appended.lastPosition,
        types: [...appended.types],
      });
      send(Buffer.byteLength(payload) < 7000 ? payload : '');
    },
    /** A wake-up that says nothing of what was appended: every subscriber reads once. */
    nudge: () => send(''),
    close: async () => {
      await sending;
      await notifier.end();
    },
  };
};
