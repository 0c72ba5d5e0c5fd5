import { hash } from 'node:crypto';
import type { EventMetadata } from '../core/events.js';

/**
 * Tamper evidence: every event's hash covers its content and the hash of the event before it in its
 * stream, so changing or removing any stored event breaks the chain from there on. The hash is taken over
 * canonical JSON (keys sorted at every level), so it does not depend on how a backend orders keys.
 */
export const canonicalJson = (value: unknown): string => {
  // Loops and one string instead of entries, filter, map and join: it runs once per event on every append
  // and every verified event, and this form costs half as much for the same output.
  if (Array.isArray(value)) {
    let text = '[';
    for (let index = 0; index < value.length; index += 1) {
      // As join() did: an element JSON has no text for (undefined, a function) leaves its slot empty.
      const item = canonicalJson(value[index]) as string | undefined;
      text += `${index === 0 ? '' : ','}${item ?? ''}`;
    }
    return `${text}]`;
  }
  if (value !== null && typeof value === 'object') {
    const record = value as Record<string, unknown>;
    let text = '{';
    for (const key of Object.keys(record).sort()) {
      const item = record[key];
      if (item === undefined) continue;
      text += `${text.length === 1 ? '' : ','}${JSON.stringify(key)}:${canonicalJson(item)}`;
    }
    return `${text}}`;
  }
  return JSON.stringify(value);
};

/** The hash of the stream's first event chains to this. */
export const genesisHash = '';

export interface ChainedContent {
  streamName: string;
  streamVersion: number;
  id: string;
  type: string;
  data: unknown;
  metadata: EventMetadata;
}

export const eventHash = (previousHash: string, event: ChainedContent): string =>
  // One-shot hash (Node 20.12 on): a few times cheaper than a Hash object for input this short.
  hash(
    'sha256',
    canonicalJson({
      previousHash,
      streamName: event.streamName,
      streamVersion: event.streamVersion,
      id: event.id,
      type: event.type,
      data: event.data,
      metadata: event.metadata,
    }),
  );
