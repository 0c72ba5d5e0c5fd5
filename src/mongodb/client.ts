import { MongoClient, MongoNetworkError, MongoServerSelectionError, type Db } from 'mongodb';
import { UnavailableError } from '../core/errors.js';
import { releaseOfShared } from '../core/shared-clients.js';
import { unavailableWhen } from '../core/store-failures.js';

/**
 * The MongoDB side of the process in one place: the client the adapters share (read models, blobs,
 * idempotency records, failure counters: one connection pool per connection string, not four), the
 * database named in the connection string, and how a connection failure reads on the request path.
 */

/** The database of a connection string (`mongodb://host/observations` → `observations`), by default `observations`. */
export const databaseName = (url: string): string => {
  // Not `new URL()`: a connection string may list several hosts, which WHATWG URLs reject.
  const path = /^mongodb(?:\+srv)?:\/\/[^/?]*\/([^?]*)/.exec(url)?.[1];
  return path ? decodeURIComponent(path) : 'observations';
};

/** The server cannot be reached: a 503 on the request path, not a bug. */
export const isConnectionFailure = (error: unknown): error is MongoNetworkError | MongoServerSelectionError =>
  error instanceof MongoNetworkError || error instanceof MongoServerSelectionError;

export const unreachable = (error: MongoNetworkError | MongoServerSelectionError): UnavailableError =>
  new UnavailableError(`MongoDB is unreachable: ${error.message}`);

/** Connection failures on the request path become 503s; anything else is a bug to report as such. */
export const orUnavailable = unavailableWhen(isConnectionFailure, unreachable);

export interface MongoHandle {
  client: MongoClient;
  db: Db;
  /** The adapter is done with the client; the last one to release it closes it. Idempotent. */
  release: () => Promise<void>;
}

const shared = new Map<string, { connected: Promise<MongoClient>; users: number }>();

/** The connected client for `url`, shared with every other adapter of this process that asked for it. */
export const acquireMongo = async (url: string): Promise<MongoHandle> => {
  let entry = shared.get(url);
  if (!entry) {
    const client = new MongoClient(url);
    const connected = client.connect().catch(async (error: unknown) => {
      shared.delete(url);
      await client.close();
      throw error;
    });
    entry = { connected, users: 0 };
    shared.set(url, entry);
  }
  const mine = entry;
  mine.users += 1;
  let client: MongoClient;
  try {
    client = await mine.connected;
  } catch (error) {
    mine.users -= 1;
    throw error;
  }
  return {
    client,
    db: client.db(databaseName(url)),
    release: releaseOfShared(shared, url, mine, () => client.close()),
  };
};
