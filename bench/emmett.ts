import type { Options } from 'autocannon';
import { randomBytes } from 'node:crypto';
import { cpuPerRequest, cpuWatcher, type CpuPerRequest } from './cpu.js';
import {
  cannon,
  figures,
  json,
  observationBody,
  startServer,
  waitProjected,
  type HttpFigures,
} from './http.js';
import { analyzeDatabase, createBenchDatabase, type BenchDatabase } from './postgres-db.js';
import { stopChild, removeTempDir, type Child } from './processes.js';
import { benchService, provision } from './provision.js';

/**
 * The `emmett` phase (issue 28), PostgreSQL only: the service's create and list of 50 against the same two
 * endpoints of bench/emmett-peer.ts (emmett-postgresql with an inline pongo projection), each in a fresh
 * database of its own, at 16 connections. Both are first filled to 5,000 observations (which warms their
 * creates) and ANALYZEd; then the measurements run interleaved in rounds — service create, emmett create,
 * service list, emmett list — so that a noisy neighbour on the machine falls on both alike, and the medians
 * over the rounds are reported. Each measurement also gives CPU per request (bench/cpu.ts): the server
 * process's, and that of the PostgreSQL backends serving its database.
 */

export const emmettConnections = 16;
const seedObservations = 5000;

export interface EmmettMeasurement extends HttpFigures {
  cpu: CpuPerRequest;
}

export interface EmmettSide {
  /** One per round, in order. */
  create: EmmettMeasurement[];
  list: EmmettMeasurement[];
}

export interface EmmettResults {
  connections: number;
  durationS: number;
  rounds: number;
  service: EmmettSide;
  emmett: EmmettSide;
}

interface Server {
  child: Child;
  createOptions: Options;
  listOptions: Options;
  /** Waits until the server's reads show every write so far: the service's projections run behind them. */
  settle: () => Promise<void>;
  databaseUrl: string;
}

/**
 * One measurement: a server's CPU and its backends' sampled around the load, and, for the service, around
 * its catching up after it, so that the projection work a create causes is counted with that create.
 */
const measureOn = async (server: Server, options: Options, durationS: number): Promise<EmmettMeasurement> => {
  const watcher = await cpuWatcher(server.child.process.pid!, server.databaseUrl);
  try {
    const before = await watcher.sample();
    const result = await cannon({ ...options, connections: emmettConnections, duration: durationS });
    await server.settle();
    const after = await watcher.sample();
    const measured = figures(result);
    return { ...measured, cpu: cpuPerRequest(before, after, measured.completed) };
  } finally {
    await watcher.close();
  }
};

/** Creates until the store holds `seedObservations`; also the creates' warm-up. */
const seed = async (server: Server): Promise<void> => {
  const result = await cannon({
    ...server.createOptions,
    connections: emmettConnections,
    amount: seedObservations,
  });
  if (result['2xx'] < seedObservations)
    throw new Error(`seeding answered ${result.non2xx} non-2xx and ${result.errors} errors`);
  await server.settle();
  await analyzeDatabase(server.databaseUrl);
};

const startService = async (database: BenchDatabase) => {
  const { dataDir, adminKey, env } = benchService('emmett-service');
  const started = await startServer('src/main.ts', 'service-emmett', { ...env, DATABASE_URL: database.url });
  const principal = await provision(started.base, adminKey);
  const url = `${started.base}/v1/tenants/${principal.tenantId}/observations`;
  const server: Server = {
    child: started.child,
    createOptions: { url, method: 'POST', headers: { ...principal.headers, ...json }, body: observationBody },
    listOptions: { url: `${url}?limit=50`, headers: principal.headers },
    settle: () => waitProjected(url, principal.headers),
    databaseUrl: database.url,
  };
  return { server, dataDir };
};

const startPeer = async (database: BenchDatabase): Promise<Server> => {
  const tenantId = 't_emmett';
  const apiKey = randomBytes(32).toString('base64url');
  const started = await startServer('bench/emmett-peer.ts', 'emmett-peer', {
    DATABASE_URL: database.url,
    PEER_TENANT: tenantId,
    PEER_API_KEY: apiKey,
    CURSOR_SECRET: randomBytes(32).toString('base64url'),
  });
  const url = `${started.base}/v1/tenants/${tenantId}/observations`;
  const headers = { 'x-api-key': apiKey };
  return {
    child: started.child,
    createOptions: { url, method: 'POST', headers: { ...headers, ...json }, body: observationBody },
    listOptions: { url: `${url}?limit=50`, headers },
    settle: () => Promise.resolve(),
    databaseUrl: database.url,
  };
};

export const runEmmett = async ({
  durationS,
  warmupS,
  rounds,
  log,
}: {
  durationS: number;
  warmupS: number;
  rounds: number;
  log: (message: string) => void;
}): Promise<EmmettResults> => {
  const serviceDb = createBenchDatabase('emmett_service');
  const peerDb = createBenchDatabase('emmett_peer');
  let service: Awaited<ReturnType<typeof startService>> | null = null;
  let peer: Server | null = null;
  try {
    service = await startService(serviceDb);
    peer = await startPeer(peerDb);
    const both = [service.server, peer];
    for (const server of both) await seed(server);
    if (warmupS > 0)
      for (const server of both)
        await cannon({ ...server.listOptions, connections: emmettConnections, duration: warmupS });
    const results: EmmettResults = {
      connections: emmettConnections,
      durationS,
      rounds,
      service: { create: [], list: [] },
      emmett: { create: [], list: [] },
    };
    for (let round = 1; round <= rounds; round += 1) {
      log(`emmett round ${round} of ${rounds}`);
      results.service.create.push(await measureOn(service.server, service.server.createOptions, durationS));
      results.emmett.create.push(await measureOn(peer, peer.createOptions, durationS));
      results.service.list.push(await measureOn(service.server, service.server.listOptions, durationS));
      results.emmett.list.push(await measureOn(peer, peer.listOptions, durationS));
    }
    return results;
  } catch (error) {
    const outputs = [
      service ? `service output:\n${service.server.child.output()}` : '',
      peer ? `emmett peer output:\n${peer.child.output()}` : '',
    ];
    throw new Error([(error as Error).message, ...outputs].join('\n'), { cause: error });
  } finally {
    if (peer) await stopChild(peer.child);
    if (service) {
      await stopChild(service.server.child);
      removeTempDir(service.dataDir);
    }
    serviceDb.drop();
    peerDb.drop();
  }
};
