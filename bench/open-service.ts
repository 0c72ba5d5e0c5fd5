import { createServer } from 'node:http';
import { pino } from 'pino';
import type { Authenticator } from '../src/http/guard.js';
import type { Principal } from '../src/core/principal.js';
import { loadConfig } from '../src/config.js';
import { startService } from '../src/service.js';

/**
 * Bench only: the real service (startService, the same stores, projections, middleware and routes as
 * src/main.ts), except that its authenticator answers one fixed principal without reading any credential.
 * It is the baseline of the `auth` phase: the same request, on the same data, minus authentication.
 * The principal belongs to BENCH_OPEN_TENANT and holds the scopes an API key of the `auth` phase holds.
 * Never start this anywhere but on loopback.
 */
const tenantId = process.env.BENCH_OPEN_TENANT;
if (!tenantId) throw new Error('BENCH_OPEN_TENANT is not set');
const principal: Principal = {
  kind: 'apiKey',
  tenantId,
  scopes: ['observations:read', 'observations:write'],
  actor: 'apikey:k_open_bench',
  revocableIds: [],
};
const answer = Promise.resolve(principal);
const open: Authenticator = { authenticate: () => answer };

const config = loadConfig();
const logger = pino({ level: config.logLevel });
const service = await startService(config, logger, { authenticator: open });
// As src/main.ts serves it: the same server time-outs.
const handle = service.app.callback();
const server = createServer({ connectionsCheckingInterval: 1000 }, (req, res) => void handle(req, res));
server.headersTimeout = config.http.headersTimeoutMs;
server.requestTimeout = config.http.requestTimeoutMs;
server.keepAliveTimeout = config.http.keepAliveTimeoutMs;
server.listen(config.port, config.host);

const shutdown = () => {
  server.close();
  server.closeIdleConnections();
  void service.stop().then(() => process.exit(0));
};
process.once('SIGINT', shutdown);
process.once('SIGTERM', shutdown);
// Gone with the benchmark even if it was killed: its end of the stdin pipe closes.
process.stdin.on('end', shutdown);
process.stdin.resume();
