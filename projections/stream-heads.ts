import type { StreamHead } from '../src/audit/merkle.js';
import type { Projection } from '../src/readmodels/projection.js';

export interface StreamHeadDoc extends StreamHead {
  id: string;
  /** Position of the head event: the digest commits to every stream as of the highest of these. */
  position: number;
}

/** The last event of every stream, per tenant: what the periodic audit digest commits to. */
export const streamHeadsProjection: Projection<StreamHeadDoc> = {
  name: 'stream_heads',
  collection: {
    name: 'stream_heads',
    fields: { position: { path: 'position', type: 'number' } },
    indexes: [['position']],
  },
  eventTypes: 'all',
  creates: 'all',
  documentKey: (event) => ({ tenantId: event.metadata.tenantId, id: event.streamName }),
  evolve: (_doc, event) => ({
    id: event.streamName,
    streamName: event.streamName,
    version: event.streamVersion,
    hash: event.hash ?? '',
    position: event.position,
  }),
};
