import { createServer, type ServerResponse } from 'node:http';
import { constants } from 'node:os';
import { pino, type Logger } from 'pino';
import { PinoPretty } from 'pino-pretty';
import type { Writable } from 'node:stream';
import { ConfigError, loadConfig } from './config.js';
import { listen, ListenError, listenExitCode } from './http/listen.js';
import { startService } from './service.js';
import { configurationForLog, settingWarnings } from './settings-startup.js';

/**
 * Starts the service from the environment. On SIGTERM or SIGINT it shuts down in order, within
 * SHUTDOWN_TIMEOUT (docs/operations.md#shutdown): readiness turns 503 and no new side effect starts; the
 * listener stops accepting; requests in flight finish, each answered with `Connection: close`; webhook
 * attempts and CV runs still in flight at the deadline are cut and left for a retry; the stores close; exit 0.
 * A second signal exits at once.
 */
/** How long an exit waits for buffered log lines to reach a stdout that nobody reads. */
const logDrainMs = 2000;

/** How long past SHUTDOWN_TIMEOUT a shutdown may take to stop the consumers and close the stores. */
const shutdownGraceMs = 5000;

/**
 * Exits once the log lines still buffered are written, or after `ms` without them. `end()` waits for the
 * write in flight, writes the rest and closes: pino 10's `flush(cb)` on an asynchronous destination calls
 * back at once (its minLength is 0), and exiting then lost the last lines (`requests drained`, `stopped`).
 * A log reader that stalls (a paused pager, a stuck log driver) must not hold the exit, a second signal
 * included: at the deadline the destination is destroyed, so pino's exit hook has nothing left to write.
 */
const ending = new WeakSet<object>();
const exitAfterLogs = (logger: Logger, { destination, stream }: LogOutput, code: number, ms = logDrainMs) => {
  // A line logged after the end (a timer, a file watch) would throw on the ended destination.
  logger.level = 'silent';
  const exit = () => {
    destination.destroy();
    process.exit(code);
  };
  // A second exit (a second signal during the first one's drain) does not wait again.
  if (ending.has(destination)) return exit();
  ending.add(destination);
  setTimeout(exit, ms);
  destination.once('close', exit);
  destination.once('error', exit);
  // Ending the stream the logger writes to ends the destination behind it once its lines are through.
  stream.end();
};

interface LogOutput {
  /** stdout, written asynchronously. */
  destination: ReturnType<typeof pino.destination>;
  /** What the logger writes to: the destination itself, or the pretty-printer in front of it. */
  stream: Writable;
}

/**
 * JSON lines for machines; readable lines for people when stdout is a terminal outside production
 * (pino-pretty, in this thread, so that an exit still waits for the last line). Its colours follow the
 * terminal's (colorette: off under NO_COLOR, on under FORCE_COLOR).
 */
const logOutput = (production: boolean): LogOutput => {
  const destination = pino.destination({ dest: 1, sync: false });
  if (production || !process.stdout.isTTY) return { destination, stream: destination as unknown as Writable };
  const stream = PinoPretty({
    destination,
    translateTime: 'SYS:HH:MM:ss.l',
    ignore: 'pid,hostname',
    singleLine: false,
  });
  return { destination, stream };
};

const main = async (): Promise<void> => {
  const config = loadConfig();
  const output = logOutput(config.production);
  const logger = pino({ level: config.logLevel }, output.stream);
  // Before any store opens: the names this process ignores, and the settings it runs with.
  for (const warning of settingWarnings(process.env)) logger.warn(warning);
  logger.info({ settings: configurationForLog(process.env, config) }, 'configuration');
  // A listener that cannot have its address (PORT, or METRICS_PORT inside startService): one line, exit 3.
  // It resolves never: the process exits once the line is written.
  const cannotListen = (error: unknown): Promise<never> => {
    if (!(error instanceof ListenError)) throw error;
    logger.fatal(error.message);
    exitAfterLogs(logger, output, listenExitCode);
    return new Promise<never>(() => undefined);
  };
  const service = await startService(config, logger).catch(cannotListen);
  const handle = service.app.callback();
  /** Responses not yet finished: a drain asks their clients to close the connection. */
  const inFlight = new Set<ServerResponse>();
  let draining = false;
  // Slow clients are cut off: headers, then the whole request, must arrive in time; idle connections close.
  const server = createServer({ connectionsCheckingInterval: 1000 }, (req, res) => {
    inFlight.add(res);
    res.once('close', () => inFlight.delete(res));
    if (draining) res.setHeader('Connection', 'close');
    void handle(req, res);
  });
  server.headersTimeout = config.http.headersTimeoutMs;
  server.requestTimeout = config.http.requestTimeoutMs;
  server.keepAliveTimeout = config.http.keepAliveTimeoutMs;
  try {
    await listen(server, { port: config.port, host: config.host, setting: 'PORT' });
  } catch (error) {
    // Nothing was served: the consumers stop and the lease is released before the exit.
    await service.stop({ deadlineMs: 0 });
    await cannotListen(error);
  }
  logger.info(
    {
      port: config.port,
      host: config.host,
      role: config.role,
      eventStore: service.stores.eventStore.kind,
      readModels: service.stores.readModels.kind,
    },
    `listening on http://${config.host}:${config.port}`,
  );

  /** Resolves once every connection has ended, or at the deadline, when the rest are cut. */
  const drainHttp = async (deadline: number): Promise<void> => {
    const closed = new Promise<void>((resolve) => server.close(() => resolve()));
    for (const res of inFlight) if (!res.headersSent) res.setHeader('Connection', 'close');
    // A keep-alive connection whose response was sent before the drain is idle now, or will be soon.
    server.closeIdleConnections();
    const sweep = setInterval(() => server.closeIdleConnections(), 100);
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<'late'>((resolve) => {
      timer = setTimeout(() => resolve('late'), Math.max(0, deadline - Date.now()));
    });
    if ((await Promise.race([closed, late])) === 'late') {
      logger.warn({ requests: inFlight.size }, 'requests still in flight at the shutdown deadline; cut');
      server.closeAllConnections();
      await closed;
    }
    clearTimeout(timer);
    clearInterval(sweep);
  };

  const shutdown = async (signal: NodeJS.Signals) => {
    const started = Date.now();
    const deadline = started + config.shutdownTimeoutMs;
    logger.info({ signal, timeoutMs: config.shutdownTimeoutMs }, 'shutting down: draining');
    draining = true;
    // What stops the process if stopping itself hangs: nothing acknowledged depends on a clean stop (a kill -9
    // loses nothing either), so a part that never finishes must not keep the process from exiting.
    setTimeout(() => {
      logger.error({ ms: Date.now() - started }, 'shutdown did not finish in time; exiting');
      exitAfterLogs(logger, output, 1);
    }, config.shutdownTimeoutMs + shutdownGraceMs).unref();
    service.beginDrain({ deadlineMs: config.shutdownTimeoutMs });
    await drainHttp(deadline);
    logger.info({ ms: Date.now() - started }, 'requests drained; stopping the consumers');
    await service.stop({ deadlineMs: Math.max(0, deadline - Date.now()) });
    logger.info({ ms: Date.now() - started }, 'stopped');
    exitAfterLogs(logger, output, 0);
  };
  let firstSignalAt = 0;
  const onSignal = (signal: NodeJS.Signals) => {
    // Ctrl-C under `npm start` reaches the service twice at once (from the terminal, and forwarded by npm):
    // only a signal sent later counts as the second one.
    if (draining && Date.now() - firstSignalAt < 1000) return;
    if (draining) {
      logger.warn({ signal }, 'second signal: exiting now');
      exitAfterLogs(logger, output, 128 + constants.signals[signal], 100);
      return;
    }
    firstSignalAt = Date.now();
    shutdown(signal).catch((error: unknown) => {
      logger.error({ err: error }, 'shutdown failed');
      exitAfterLogs(logger, output, 1);
    });
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
};

main().catch((error: unknown) => {
  if (!(error instanceof ConfigError)) {
    console.error(error);
    process.exit(1);
  }
  console.error(`configuration error: ${error.message}`);
  // A misspelt name is often why a setting is missing or has its default.
  for (const warning of settingWarnings(process.env)) console.error(`warning: ${warning}`);
  process.exit(2);
});
