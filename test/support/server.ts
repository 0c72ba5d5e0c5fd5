import type { AddressInfo } from 'node:net';
import type { Server } from 'node:http';
import { pino } from 'pino';
import { observationsProjection } from '../../projections/observations.js';
import { createApp } from '../../src/app.js';
import { newId, systemClock } from '../../src/core/ids.js';
import { cursorCodec } from '../../src/http/cursor.js';
import { projectionRunner } from '../../src/readmodels/runner.js';
import { openStores, type Stores } from '../../src/stores.js';
import { tempDir } from './adapters.js';

export interface TestServer {
  url: string;
  stores: Stores;
  close: () => Promise<void>;
}

/** The real application on real stores in a temporary directory, listening on an ephemeral loopback port. */
export const startTestServer = async (
  options: { bodyLimit?: number; consistencyTimeoutMs?: number } = {},
): Promise<TestServer> => {
  const { dir, remove } = tempDir();
  const stores = await openStores({ dataDir: dir, eventStoreUrl: null, mongodbUrl: null });
  const logger = pino({ level: 'silent' });
  const observations = projectionRunner(observationsProjection, { ...stores, logger });
  await observations.start();
  const app = createApp({
    ...stores,
    projections: { observations },
    cursors: cursorCodec('test-secret'),
    clock: systemClock,
    ids: (prefix) => newId(prefix),
    logger,
    bodyLimit: options.bodyLimit ?? 1024 * 1024,
    consistencyTimeoutMs: options.consistencyTimeoutMs ?? 5000,
  });
  const server: Server = await new Promise((resolve) => {
    const listening = app.listen(0, '127.0.0.1', () => resolve(listening));
  });
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    stores,
    close: async () => {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
      await observations.stop();
      await stores.close();
      remove();
    },
  };
};

/** JSON over real HTTP; returns the status, headers and parsed body (problem documents included). */
export const request = async (
  url: string,
  init: { method?: string; body?: unknown; headers?: Record<string, string>; rawBody?: string } = {},
) => {
  const headers: Record<string, string> = {
    ...(init.body !== undefined ? { 'content-type': 'application/json' } : {}),
    ...init.headers,
  };
  const response = await fetch(url, {
    method: init.method ?? 'GET',
    headers,
    ...(init.rawBody !== undefined
      ? { body: init.rawBody }
      : init.body !== undefined
        ? { body: JSON.stringify(init.body) }
        : {}),
  });
  const text = await response.text();
  return {
    status: response.status,
    headers: response.headers,
    // Tests read response bodies loosely; the shapes are what they assert.
    body: (text ? JSON.parse(text) : undefined) as any, // eslint-disable-line @typescript-eslint/no-unnecessary-type-assertion
  };
};
