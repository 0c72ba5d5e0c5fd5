import { createHash } from 'node:crypto';
import type { EventMetadata } from '../core/events.js';

/**
 * Tamper evidence: every event's hash covers its content and the hash of the event before it in its
 * stream, so changing or removing any stored event breaks the chain from there on. The hash is taken over
 * canonical JSON (keys sorted at every level), so it does not depend on how a backend orders keys.
 */
export const canonicalJson = (value: unknown): string => {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>)
      .filter(([, item]) => item !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([key, item]) => `${JSON.stringify(key)}:${canonicalJson(item)}`).join(',')}}`;
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
  createHash('sha256')
    .update(
      canonicalJson({
        previousHash,
        streamName: event.streamName,
        streamVersion: event.streamVersion,
        id: event.id,
        type: event.type,
        data: event.data,
        metadata: event.metadata,
      }),
    )
    .digest('hex');
