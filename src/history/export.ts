import type { RecordedEvent } from '../core/events.js';
import { topLevelSecrets } from '../core/secret-fields.js';
import { committedForm, genesisHash } from '../eventstore/hash-chain.js';
import type { EventStore } from '../eventstore/port.js';
import { withoutSecrets } from './redaction.js';

/*
 * The history as an auditor downloads it (docs/auditors.md): each event carries its hash and the hash of
 * the event before it in its stream, and shows its secret fields as the commitments the hash covers, so
 * that anyone can recompute every chain from the download alone (client/src/verify-history.ts does).
 */

/**
 * An event as the history API shows it: the envelope without the store's internals, its chain hashes,
 * and its data in committed form (src/eventstore/hash-chain.ts), salts left out. An event stored before
 * secret fields were committed to has them `[redacted]`, named in `uncommitted`: its hash covers values
 * the export does not show, so it cannot be recomputed from the export.
 */
export const exportedEvent = (event: RecordedEvent, previousHash: string | null) => {
  const envelope = {
    id: event.id,
    type: event.type,
    streamName: event.streamName,
    streamVersion: event.streamVersion,
    position: event.position,
  };
  const chain = { hash: event.hash ?? null, previousHash };
  if (event.metadata.salts !== undefined) {
    const { data, metadata } = committedForm(event);
    return { ...envelope, data, metadata, ...chain };
  }
  const uncommitted = topLevelSecrets(event.data);
  return {
    ...envelope,
    data: withoutSecrets(event.data),
    metadata: event.metadata,
    ...chain,
    ...(uncommitted.length > 0 ? { uncommitted } : {}),
  };
};

/** How many streams' last hashes a download remembers, so that its memory does not grow with the streams. */
const rememberedStreams = 50_000;

const linkKey = (streamName: string, version: number): string => `${version}:${streamName}`;

/**
 * The previous hash of each event a download hands out, page by page: from the page itself, from the
 * streams it saw last, or else read from the store (one read per such event: a filtered download's first
 * event of each stream, or a stream not seen for a long while). `null` when the store has no such event.
 */
export const previousHashes = (eventStore: EventStore) => {
  const lastOfStream = new Map<string, { version: number; hash: string | undefined }>();
  const remember = (event: RecordedEvent) => {
    lastOfStream.delete(event.streamName);
    lastOfStream.set(event.streamName, { version: event.streamVersion, hash: event.hash });
    // A Map iterates in insertion order: the first key is the stream seen longest ago.
    if (lastOfStream.size > rememberedStreams) lastOfStream.delete(lastOfStream.keys().next().value!);
  };
  const readPrevious = async (event: RecordedEvent): Promise<string | null> => {
    const version = event.streamVersion - 1;
    const [previous] = await eventStore.readStream(event.streamName, {
      fromVersion: version,
      maxCount: 1,
      raw: true,
    });
    return previous?.streamVersion === version ? (previous.hash ?? null) : null;
  };
  return async (events: readonly RecordedEvent[]): Promise<(string | null)[]> => {
    const inPage = new Map(events.map((event) => [linkKey(event.streamName, event.streamVersion), event]));
    const links: (string | null)[] = [];
    for (const event of events) {
      if (event.streamVersion === 0) {
        links.push(genesisHash);
        continue;
      }
      const last = lastOfStream.get(event.streamName);
      const known =
        inPage.get(linkKey(event.streamName, event.streamVersion - 1))?.hash ??
        (last?.version === event.streamVersion - 1 ? last.hash : undefined);
      links.push(known ?? (await readPrevious(event)));
    }
    for (const event of events) remember(event);
    return links;
  };
};
