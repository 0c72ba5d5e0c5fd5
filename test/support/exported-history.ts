import type { ExportedEvent } from '../../client/src/verify-history.js';
import { eventHash, genesisHash } from '../../src/eventstore/hash-chain.js';

/**
 * A downloaded history, hashed by the service's own rule: `versions` rounds over `streams` streams, so that
 * each stream's next event comes `streams` lines after its last (and, in a large file, in another chunk).
 */
export const exportedHistory = ({
  streams,
  versions,
  nameOf = (index) => `observation-t_1_o_${String(index).padStart(4, '0')}`,
  notesOf = (version) => `note ${version}`,
}: {
  streams: number;
  versions: number;
  nameOf?: (stream: number) => string;
  notesOf?: (version: number) => string;
}): ExportedEvent[] => {
  const heads = new Map<string, string>();
  const events: ExportedEvent[] = [];
  for (let version = 0, position = 1; version < versions; version += 1) {
    for (let index = 0; index < streams; index += 1, position += 1) {
      const streamName = nameOf(index);
      const previousHash = heads.get(streamName) ?? genesisHash;
      const event = {
        id: `e_${position}`,
        type: version === 0 ? 'ObservationRecorded' : 'ObservationUpdated',
        streamName,
        streamVersion: version,
        data: { notes: notesOf(version), observationId: `o_${index}` },
        metadata: {
          actor: 'apikey:k_1',
          causationId: null,
          correlationId: 'c_1',
          occurredAt: '2026-05-01T09:30:00.000Z',
          schemaVersion: 1,
          tenantId: 't_1',
        },
      };
      const hash = eventHash(previousHash, event);
      heads.set(streamName, hash);
      events.push({ ...event, position, hash, previousHash });
    }
  }
  return events;
};
