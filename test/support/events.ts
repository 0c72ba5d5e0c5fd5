import { randomUUID } from 'node:crypto';
import type { NewEvent } from '../../src/core/events.js';

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

/** Resolves when `check` returns true, polling briefly; fails the test after `ms`. */
export const eventually = async (check: () => boolean | Promise<boolean>, ms = 5000): Promise<void> => {
  const deadline = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`condition not met within ${ms} ms`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
};
