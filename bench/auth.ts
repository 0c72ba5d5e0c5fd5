import type { Options } from 'autocannon';
import {
  cannon,
  connections,
  figures,
  json,
  measure,
  observationBody,
  startServer,
  waitProjected,
  type HttpFigures,
} from './http.js';
import { removeTempDir, stopChild, type Child } from './processes.js';
import { benchService, provision } from './provision.js';

/**
 * The `auth` phase (issue 3): `GET /v1/tenants/{t}/observations?limit=50` with an API key, and with a
 * user's JWT, against the same request unauthenticated. One DATA_DIR is seeded once through the real
 * service; then bench/open-service.ts (the same service with an authenticator that answers a fixed
 * principal without reading credentials) serves it for the baseline, and src/main.ts serves it again for
 * the two authenticated runs, so all three read identical data. The baseline runs before and after the
 * authenticated runs and the mean counts. RATE_LIMIT=off everywhere.
 * Target: each authenticated req/s >= 0.85 of the unauthenticated req/s.
 */

export interface AuthResults {
  connections: number;
  durationS: number;
  tenantId: string;
  /** Observations stored (and projected) before the list runs. */
  observations: number;
  /** The unauthenticated baseline, before and after the authenticated runs. */
  open: HttpFigures;
  openAfter: HttpFigures;
  /** The mean of the two: what the ratios divide by. */
  openRequestsPerSecond: number;
  apiKey: HttpFigures;
  jwt: HttpFigures;
  apiKeyPerOpen: number;
  jwtPerOpen: number;
}

const postJson = async (url: string, body: unknown, headers: Record<string, string> = {}) => {
  const response = await fetch(url, {
    method: 'POST',
    headers: { ...json, ...headers },
    body: JSON.stringify(body),
  });
  const text = await response.text();
  return { status: response.status, text, json: () => JSON.parse(text) as Record<string, unknown> };
};

/** A user of the tenant with the observation scopes, logged in: its access token. */
const logIn = async (base: string, tenantId: string, tenantAdminKey: string): Promise<string> => {
  const email = 'bench-user@example.com';
  const password = 'a long bench password, not a secret';
  const user = await postJson(
    `${base}/v1/tenants/${tenantId}/users`,
    { email, password, scopes: ['observations:read', 'observations:write'] },
    { 'x-api-key': tenantAdminKey },
  );
  if (user.status !== 201) throw new Error(`POST …/users answered ${user.status}: ${user.text}`);
  const token = await postJson(`${base}/v1/auth/token`, { email, password, tenantId });
  const accessToken = token.status === 200 ? token.json().accessToken : undefined;
  if (typeof accessToken !== 'string')
    throw new Error(`POST /v1/auth/token answered ${token.status}: ${token.text}`);
  return accessToken;
};

/** Fails fast when a server answers the request otherwise than expected (e.g. 401 instead of 200). */
const expectStatus = async (url: string, headers: Record<string, string>, status: number, what: string) => {
  const response = await fetch(url, { headers });
  const text = await response.text();
  if (response.status !== status)
    throw new Error(`${what}: GET ${url} answered ${response.status}, not ${status}: ${text.slice(0, 300)}`);
};

export const runAuth = async ({
  durationS,
  warmupS,
  observations = 5000,
}: {
  durationS: number;
  warmupS: number;
  observations?: number;
}): Promise<AuthResults> => {
  const { dataDir, adminKey, env: base } = benchService('auth');
  const env = {
    ...base,
    // The token is issued during seeding and used minutes later, by a server on another port: the issuer
    // (PUBLIC_URL, by default http://localhost:<PORT>) must not change with the port.
    ACCESS_TOKEN_TTL: '2h',
    PUBLIC_URL: 'http://localhost',
  };
  let server: { child: Child; base: string } | null = null;
  const stop = async () => {
    if (server) await stopChild(server.child);
    server = null;
  };
  const run = async <T>(work: (base: string) => Promise<T>): Promise<T> => {
    try {
      return await work(server!.base);
    } catch (error) {
      throw new Error(`${(error as Error).message}\nserver output:\n${server?.child.output() ?? ''}`, {
        cause: error,
      });
    } finally {
      await stop();
    }
  };
  try {
    // 1. Seed through the real service: a tenant, an API key, a logged-in user, the observations.
    server = await startServer('src/main.ts', 'auth-seed', env);
    const seeded = await run(async (base) => {
      const principal = await provision(base, adminKey);
      const token = await logIn(base, principal.tenantId, principal.tenantAdminKey);
      const url = `${base}/v1/tenants/${principal.tenantId}/observations`;
      await waitProjected(url, principal.headers);
      const created = await cannon({
        url,
        method: 'POST',
        headers: { ...principal.headers, ...json },
        body: observationBody,
        amount: observations,
      });
      await waitProjected(url, principal.headers);
      // waitProjected creates one observation each time.
      return { principal, token, stored: created['2xx'] + 2 };
    });
    const path = `/v1/tenants/${seeded.principal.tenantId}/observations?limit=50`;
    const listOptions = (base: string, headers: Record<string, string>): Options => ({
      url: `${base}${path}`,
      headers,
    });

    // 2. The baseline: the same request, the same data, no authentication. Run once before and once after
    // the authenticated runs, and averaged, so that a drift in the machine's load weighs on both sides.
    const measureOpen = async (name: string) => {
      server = await startServer('bench/open-service.ts', name, {
        ...env,
        BENCH_OPEN_TENANT: seeded.principal.tenantId,
      });
      return run(async (base) => {
        await expectStatus(`${base}${path}`, {}, 200, 'the open service');
        return measure(listOptions(base, {}), warmupS, durationS);
      });
    };
    const openBefore = await measureOpen('auth-open-before');

    // 3. The real service on the same DATA_DIR: an API key, then the user's JWT.
    server = await startServer('src/main.ts', 'auth-real', env);
    const { apiKey, jwt } = await run(async (base) => {
      await expectStatus(`${base}${path}`, {}, 401, 'the service without credentials');
      const bearer = { authorization: `Bearer ${seeded.token}` };
      await expectStatus(`${base}${path}`, bearer, 200, 'the service with the JWT');
      return {
        apiKey: await measure(listOptions(base, seeded.principal.headers), warmupS, durationS),
        jwt: await measure(listOptions(base, bearer), warmupS, durationS),
      };
    });

    const openAfter = await measureOpen('auth-open-after');

    const open = figures(openBefore);
    const after = figures(openAfter);
    const openRequestsPerSecond = (open.requestsPerSecond + after.requestsPerSecond) / 2;
    return {
      connections,
      durationS,
      tenantId: seeded.principal.tenantId,
      observations: seeded.stored,
      open,
      openAfter: after,
      openRequestsPerSecond,
      apiKey: figures(apiKey),
      jwt: figures(jwt),
      apiKeyPerOpen: apiKey.requests.average / openRequestsPerSecond,
      jwtPerOpen: jwt.requests.average / openRequestsPerSecond,
    };
  } finally {
    await stop();
    removeTempDir(dataDir);
  }
};
