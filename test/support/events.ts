import { randomUUID } from 'node:crypto';
import type { NewEvent } from '../../src/core/events.js';
import { newId } from '../../src/core/ids.js';
import { streamName } from '../../src/core/streams.js';

/** A unique tenant id per test, so that suites can share a server without seeing each other's events. */
export const uniqueTenant = (): string => `t_${randomUUID().replace(/-/g, '').slice(0, 16)}`;

export const anEvent = (type: string, data: Record<string, unknown>, tenantId: string): NewEvent => ({
  id: randomUUID(),
  type,
  data,
  metadata: {
    tenantId,
    actor: 'test',
    correlationId: randomUUID(),
    causationId: null,
    occurredAt: new Date().toISOString(),
    schemaVersion: 1,
  },
});

/**
 * A new observation's ObservationRecorded in today's shape, for appending straight to a store: the fields
 * given replace the defaults. Answers the observation's id and stream with the event.
 */
export const anObservationRecorded = (
  tenantId: string,
  fields: { notes?: string | null; attributes?: Record<string, unknown> } = {},
) => {
  const observationId = newId('o');
  const event = anEvent(
    'ObservationRecorded',
    {
      observationId,
      observedAt: '2026-05-01T09:30:00.000Z',
      position: { lat: 45, lon: 7 },
      locationId: null,
      visitId: null,
      notes: null,
      attributes: {},
      ...fields,
    },
    tenantId,
  );
  return { observationId, stream: streamName('observation', tenantId, observationId), event };
};

/** Resolves when `check` returns true, polling briefly; fails the test after `ms`. */
export const eventually = async (check: () => boolean | Promise<boolean>, ms = 5000): Promise<void> => {
  const deadline = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`condition not met within ${ms} ms`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
};
