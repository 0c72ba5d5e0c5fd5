import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { pino, type Logger } from 'pino';
import { loadConfig, type Config } from '../../src/config.js';
import { startService, type Service, type ServiceOptions } from '../../src/service.js';
import type { Stores } from '../../src/stores.js';
import { tempDir } from './adapters.js';

/** The CURSOR_SECRET of every test server: a process started on its DATA_DIR needs the same one. */
export const testCursorSecret = 'test-secret';

export interface TestServer {
  url: string;
  stores: Stores;
  service: Service;
  platformAdminKey: string;
  /** The temporary DATA_DIR: the development signing keyring lives there as signing-keys.json. */
  dataDir: string;
  close: () => Promise<void>;
}

/**
 * The real service on real embedded stores in a temporary directory, listening on an ephemeral loopback
 * port. The port is bound first, so the service's public URL (its token issuer) is the real one.
 * Given a `dataDir`, it runs on that directory instead and leaves it in place on close: a second server
 * on the same directory is the same service restarted.
 */
export const startTestServer = async (
  env: Record<string, string> = {},
  {
    dataDir,
    options,
    logger = pino({ level: 'silent' }),
    configure = (config) => config,
  }: {
    dataDir?: string;
    options?: ServiceOptions;
    logger?: Logger;
    /** Changes what no environment variable sets (a test seam, such as the CV detector's thread script). */
    configure?: (config: Config) => Config;
  } = {},
): Promise<TestServer> => {
  const { dir, remove } = dataDir ? { dir: dataDir, remove: () => undefined } : tempDir();
  // Timeouts are checked this often: tests of HTTP_HEADERS_TIMEOUT / HTTP_REQUEST_TIMEOUT use short ones.
  const server: Server = createServer({ connectionsCheckingInterval: 100 });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  const url = `http://127.0.0.1:${port}`;
  const config = configure(
    loadConfig({
      DATA_DIR: dir,
      PORT: String(port),
      PUBLIC_URL: url,
      CURSOR_SECRET: testCursorSecret,
      // The hourly digest would add a digest to a test that runs across the top of an hour.
      AUDIT_DIGEST_SCHEDULE: 'off',
      ...env,
    }),
  );
  server.headersTimeout = config.http.headersTimeoutMs;
  server.requestTimeout = config.http.requestTimeoutMs;
  server.keepAliveTimeout = config.http.keepAliveTimeoutMs;
  const service = await startService(config, logger, options);
  const handle = service.app.callback();
  server.on('request', (req, res) => void handle(req, res));
  return {
    url,
    stores: service.stores,
    service,
    platformAdminKey: service.platformAdminKey,
    dataDir: dir,
    close: async () => {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
      await service.stop();
      remove();
    },
  };
};

type RequestInit = {
  method?: string;
  body?: unknown;
  headers?: Record<string, string>;
  rawBody?: string | Uint8Array;
};

/** JSON over real HTTP; returns the status, headers and parsed body (problem documents included). */
export const request = async (url: string, init: RequestInit = {}) => {
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
  // Image bytes (media downloads) are not JSON: read those with fetch.
  const json = text !== '' && !response.headers.get('content-type')?.startsWith('image/');
  return {
    status: response.status,
    headers: response.headers,
    // Tests read response bodies loosely; the shapes are what they assert.
    body: (json ? JSON.parse(text) : undefined) as any, // eslint-disable-line @typescript-eslint/no-unnecessary-type-assertion
  };
};

/** A tenant with an admin API key, made through the API as an operator would. */
export const withTenant = async (server: TestServer, name = 'acme') => {
  const tenant = await request(`${server.url}/v1/tenants`, {
    method: 'POST',
    body: { name, notificationEmail: `ops@${name}.test` },
    headers: { 'X-API-Key': server.platformAdminKey },
  });
  if (tenant.status !== 201) throw new Error(`tenant: ${tenant.status} ${JSON.stringify(tenant.body)}`);
  const tenantId = tenant.body.id as string;
  const adminKey = tenant.body.adminApiKey as string;
  /** A fresh API key of the tenant with exactly these scopes. */
  const key = async (scopes: string[]) => {
    const response = await request(`${server.url}/v1/tenants/${tenantId}/api-keys`, {
      method: 'POST',
      body: { name: scopes.join(' '), scopes },
      headers: { 'X-API-Key': adminKey },
    });
    if (response.status !== 201)
      throw new Error(`api key: ${response.status} ${JSON.stringify(response.body)}`);
    return response.body.key as string;
  };
  return { tenantId, adminKey, key };
};
