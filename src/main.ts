import { pino } from 'pino';
import { ConfigError, loadConfig } from './config.js';
import { startService } from './service.js';

/** Starts the service from the environment, and stops it cleanly on SIGINT or SIGTERM. */
const main = async (): Promise<void> => {
  const config = loadConfig();
  const logger = pino({ level: config.logLevel });
  const service = await startService(config, logger);
  const server = service.app.listen(config.port, config.host, () => {
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
