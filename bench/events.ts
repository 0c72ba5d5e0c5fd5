import { randomUUID } from 'node:crypto';
import type { NewEvent } from '../src/core/events.js';
import { newId } from '../src/core/ids.js';
import { streamName } from '../src/core/streams.js';
import type { ObservationRecorded, ObservationUpdated } from '../src/observations/observation.js';

/** Realistic observation events in the decider's own shape, generated on demand so seeding never holds them all. */

export const benchTenant = 't_bench';

const species = ['fox', 'badger', 'red deer', 'hedgehog', 'barn owl', 'otter', 'pine marten', 'roe deer'];
const base = Date.parse('2025-04-01T06:00:00.000Z');

const metadata = (tenantId: string, at: Date): NewEvent['metadata'] => ({
  tenantId,
  actor: 'apikey:k_bench',
  correlationId: randomUUID(),
  causationId: null,
  occurredAt: at.toISOString(),
  schemaVersion: 1,
});

/** Deterministic-ish variety from a counter, so every run writes comparable bytes. */
const recorded = (
  tenantId: string,
  observationId: string,
  i: number,
): NewEvent<ObservationRecorded['type']> => {
  const at = new Date(base + i * 1000);
  const data: ObservationRecorded['data'] = {
    observationId,
    observedAt: new Date(base + i * 1000 - 60_000).toISOString(),
    position: { lat: 51 + (i % 1000) / 1000, lon: -1.5 + (i % 777) / 1000, accuracyM: 5 + (i % 20) },
    locationId: null,
    visitId: null,
    notes: `Seen near the hedge line at dusk, heading north (${i})`,
    attributes: { species: species[i % species.length], count: 1 + (i % 4), behaviour: 'foraging' },
  };
  return { id: randomUUID(), type: 'ObservationRecorded', data, metadata: metadata(tenantId, at) };
};

const updated = (
  observationId: string,
  tenantId: string,
  i: number,
  n: number,
): NewEvent<ObservationUpdated['type']> => {
  const at = new Date(base + i * 1000 + n * 60_000);
  const data: ObservationUpdated['data'] = {
    observationId,
    changes:
      n % 2 === 1
        ? { notes: `Revised after review #${n}: two adults, one juvenile (${i})` }
        : {
            attributes: {
              species: species[(i + n) % species.length],
              count: 1 + ((i + n) % 5),
              reviewed: true,
            },
          },
  };
  return { id: randomUUID(), type: 'ObservationUpdated', data, metadata: metadata(tenantId, at) };
};

/** One observation's stream: a recording followed by `perStream - 1` updates. `i` numbers the observation. */
export const observationStream = (
  i: number,
  perStream: number,
  tenantId = benchTenant,
): { stream: string; events: NewEvent[] } => {
  const observationId = newId('o', new Date(base + i * 1000));
  const events: NewEvent[] = [recorded(tenantId, observationId, i)];
  for (let n = 1; n < perStream; n += 1) events.push(updated(observationId, tenantId, i, n));
  return { stream: streamName('observation', tenantId, observationId), events };
};
