import type { EventFilter, EventStore } from '../eventstore/port.js';
import type { ConsumerStatus } from '../core/supervisor.js';

/** Where one consumer is: what its lag is computed from at scrape time. */
export interface ConsumerProbe {
  name: string;
  /** The events it consumes: a checkpoint followed only by events of other types is caught up. */
  filter: EventFilter;
  /** The last position it handled; null when this process does not know it (yet). */
  checkpoint: () => Promise<number | null>;
  /** Events it parked that still wait for an operator. */
  parked: () => Promise<number>;
}

export interface ConsumerReading {
  name: string;
  position: number | null;
  lagEvents: number | null;
  lagSeconds: number | null;
  parked: number | null;
}

interface Sources {
  consumers: () => ConsumerStatus[];
  probes: () => ConsumerProbe[];
  eventStore: Pick<EventStore, 'headPosition' | 'readAll'>;
}

/**
 * The lag of one consumer: the oldest event of its kinds after its checkpoint says whether it is behind,
 * and since when; behind, its lag in events is the head minus its checkpoint. One indexed read of one
 * event, whatever the backlog.
 */
export const readConsumer = async (
  eventStore: Sources['eventStore'],
  probe: ConsumerProbe,
  head: number,
  now: number,
): Promise<ConsumerReading> => {
  const [checkpoint, parked] = await Promise.all([probe.checkpoint(), probe.parked()]);
  if (checkpoint === null)
    return { name: probe.name, position: null, lagEvents: null, lagSeconds: null, parked };
  const { events } = await eventStore.readAll({
    after: checkpoint,
    maxCount: 1,
    filter: probe.filter,
    raw: true,
  });
  const oldest = events[0];
  return {
    name: probe.name,
    position: checkpoint,
    lagEvents: oldest ? Math.max(0, head - checkpoint) : 0,
    lagSeconds: oldest ? Math.max(0, (now - Date.parse(oldest.metadata.occurredAt)) / 1000) : 0,
    parked,
  };
};

/** A reading is shared by the gauges of one scrape: each gauge's collect asks, one read answers. */
const sharedForMs = 250;

/**
 * Reads every consumer this process runs and has a probe for. A store that fails the read leaves the
 * consumer's lag out of the scrape rather than failing the whole scrape.
 */
export const consumerSnapshot = (sources: () => Sources | null) => {
  let last: { at: number; readings: Promise<ConsumerReading[]> } | null = null;

  const read = async (): Promise<ConsumerReading[]> => {
    const given = sources();
    if (!given) return [];
    const running = new Set(given.consumers().map((consumer) => consumer.name));
    const probes = given.probes().filter((probe) => running.has(probe.name));
    if (probes.length === 0) return [];
    const head = await given.eventStore.headPosition().catch(() => null);
    if (head === null) return [];
    const now = Date.now();
    const readings = await Promise.all(
      probes.map((probe) => readConsumer(given.eventStore, probe, head, now).catch(() => null)),
    );
    return readings.filter((reading): reading is ConsumerReading => reading !== null);
  };

  return (): Promise<ConsumerReading[]> => {
    if (!last || Date.now() - last.at > sharedForMs) last = { at: Date.now(), readings: read() };
    return last.readings;
  };
};
