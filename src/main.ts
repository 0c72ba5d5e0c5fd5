import { pino } from 'pino';
import { observationsProjection } from '../projections/observations.js';
import { createApp } from './app.js';
import { ConfigError, loadConfig } from './config.js';
import { newId, systemClock } from './core/ids.js';
import { cursorCodec } from './http/cursor.js';
import { projectionRunner } from './readmodels/runner.js';
import { developmentSecret } from './secrets.js';
import { openStores } from './stores.js';

/** Wires configuration, stores, projections and HTTP together, and shuts them down in reverse order. */
const main = async (): Promise<void> => {
  const config = loadConfig();
  const logger = pino({ level: config.logLevel });
  const stores = await openStores(config);
  const observations = projectionRunner(observationsProjection, { ...stores, logger });
  await observations.start();

  const app = createApp({
    ...stores,
    projections: { observations },
    cursors: cursorCodec(config.cursorSecret ?? developmentSecret(config.dataDir, 'cursorSecret')),
    clock: systemClock,
    ids: (prefix) => newId(prefix),
    logger,
    bodyLimit: config.bodyLimit,
    consistencyTimeoutMs: config.consistencyTimeoutMs,
  });
  const server = app.listen(config.port, config.host, () => {
    logger.info(
      {
        port: config.port,
        host: config.host,
        eventStore: stores.eventStore.kind,
        readModels: stores.readModels.kind,
      },
      `listening on http://${config.host}:${config.port}`,
    );
  });

  const shutdown = (signal: string) => {
    logger.info({ signal }, 'shutting down');
    server.close();
    server.closeIdleConnections();
    void observations
      .stop()
      .then(() => stores.close())
      .then(() => process.exit(0));
  };
  process.once('SIGINT', () => shutdown('SIGINT'));
  process.once('SIGTERM', () => shutdown('SIGTERM'));
};

main().catch((error: unknown) => {
  console.error(error instanceof ConfigError ? `configuration error: ${error.message}` : error);
  process.exit(error instanceof ConfigError ? 2 : 1);
});
