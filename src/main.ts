import { createServer } from 'node:http';
import { pino } from 'pino';
import { ConfigError, loadConfig } from './config.js';
import { startService } from './service.js';

/** Starts the service from the environment, and stops it cleanly on SIGINT or SIGTERM. */
const main = async (): Promise<void> => {
  const config = loadConfig();
  const logger = pino({ level: config.logLevel });
  const service = await startService(config, logger);
  // Slow clients are cut off: headers, then the whole request, must arrive in time; idle connections close.
  const handle = service.app.callback();
  const server = createServer({ connectionsCheckingInterval: 1000 }, (req, res) => void handle(req, res));
  server.headersTimeout = config.http.headersTimeoutMs;
  server.requestTimeout = config.http.requestTimeoutMs;
  server.keepAliveTimeout = config.http.keepAliveTimeoutMs;
  server.listen(config.port, config.host, () => {
    logger.info(
      {
        port: config.port,
        host: config.host,
        eventStore: service.stores.eventStore.kind,
        readModels: service.stores.readModels.kind,
      },
      `listening on http://${config.host}:${config.port}`,
    );
  });

  const shutdown = (signal: string) => {
    logger.info({ signal }, 'shutting down');
    server.close();
    server.closeIdleConnections();
    void service.stop().then(() => process.exit(0));
  };
  process.once('SIGINT', () => shutdown('SIGINT'));
  process.once('SIGTERM', () => shutdown('SIGTERM'));
};

main().catch((error: unknown) => {
  console.error(error instanceof ConfigError ? `configuration error: ${error.message}` : error);
  process.exit(error instanceof ConfigError ? 2 : 1);
});
