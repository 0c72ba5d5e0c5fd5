import type { Server } from 'node:net';

/**
 * Binding a listener, with the operator's reading of the errors Node only throws as an `error` event: a
 * port in use, a port this user may not bind, an address not on this machine. Each is one line naming the
 * setting to change, and exit code 3 (docs/operations.md#exit-codes), instead of a stack trace.
 */
export class ListenError extends Error {
  override readonly name = 'ListenError';
}

/** Exit code of a service that cannot have the address it is told to listen on. */
export const listenExitCode = 3;

/** The sentence for a bind error Node reports, or null for one that is not the operator's to fix. */
export const bindProblem = (
  code: string | undefined,
  { port, host, setting }: { port: number; host: string; setting: string },
): string | null => {
  switch (code) {
    case 'EADDRINUSE':
      return `cannot listen on ${host}:${port}: port ${port} is in use by another process; stop it, or set ${setting} to a free port`;
    case 'EACCES':
      return `cannot listen on ${host}:${port}: this user may not bind port ${port} (ports below 1024 need privileges); set ${setting} to a port from 1024`;
    case 'EADDRNOTAVAIL':
      return `cannot listen on ${host}:${port}: ${host} is not an address of this machine; set HOST to one of its addresses, or 0.0.0.0`;
    default:
      return null;
  }
};

/** Listens, or rejects: with a ListenError for a bind error the operator can fix, else with Node's error. */
export const listen = (
  server: Server,
  address: { port: number; host: string; setting: string },
): Promise<void> =>
  new Promise<void>((resolve, reject) => {
    const failed = (error: NodeJS.ErrnoException) => {
      const problem = bindProblem(error.code, address);
      reject(problem === null ? error : new ListenError(problem, { cause: error }));
    };
    server.once('error', failed);
    server.listen(address.port, address.host, () => {
      server.off('error', failed);
      resolve();
    });
  });
