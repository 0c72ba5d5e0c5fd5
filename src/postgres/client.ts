import pg from 'pg';
import { UnavailableError } from '../core/errors.js';
import { releaseOfShared } from '../core/shared-clients.js';
import { unavailableWhen } from '../core/store-failures.js';

/**
 * The PostgreSQL side of the process in one place: the pool every adapter of the process shares (event
 * store, read models, blobs, idempotency records, limits: one pool per connection string, not five), and
 * how a server that cannot serve reads on the request path.
 */

/** DATABASE_POOL_SIZE's default: connections one process opens at most, all adapters together. */
export const defaultPoolSize = 10;

/** Whether a connection string names PostgreSQL (DATABASE_URL). */
export const isPostgresUrl = (url: string | null | undefined): url is string =>
  typeof url === 'string' && /^postgres(?:ql)?:\/\//.test(url);

/** System error codes of a socket that cannot reach the server or lost it. */
const connectionCodes = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ENOTFOUND',
  'EAI_AGAIN',
  'ETIMEDOUT',
  'EPIPE',
  'EHOSTUNREACH',
  'ENETUNREACH',
  // A unix socket that is not there: the local server is down.
  'ENOENT',
]);

/**
 * SQLSTATEs that say the server, not the statement, failed: class 08 (connection exception), 53 (out of
 * disk, memory or connections), 57P01–57P03 (shut down, crashed, starting), 58 (system error), 25006 (a
 * read-only standby after a failover), 25P03 and 57P05 (a session the server ended as idle: this process
 * was frozen or stalled mid-transaction), 57014 (a statement cancelled, by statement_timeout above all:
 * the database was too slow or locked to answer in time, which is no fault of the event or request).
 */
const serverStates = /^(08|53|57P0[1235]|58)|^(25006|25P03|57014)$/;

/**
 * The server's source file of the errors it raises while it sets a new session up, before any statement:
 * a database that does not accept connections now (`ALTER DATABASE … ALLOW_CONNECTIONS false`, SQLSTATE
 * 55000), one dropped or renamed (3D000), CONNECT revoked (42501). Their SQLSTATEs also name statements'
 * errors, so the source is what says the connection, not the statement, failed (it is not translated, as
 * messages are under lc_messages).
 */
const sessionStartFile = 'postinit.c';

/** node-pg's own words for a pool or connection that gave up (it sets no code on these). */
const driverMessages =
  /Connection terminated|timeout exceeded when trying to connect|Client has encountered a connection error|Cannot use a pool after calling end/;

/** The server cannot serve this request: a 503, not a bug, and never a reason to park an event. */
export const isConnectionFailure = (error: unknown): error is Error => {
  if (!(error instanceof Error)) return false;
  const { code, file } = error as { code?: unknown; file?: unknown };
  if (typeof code === 'string' && (connectionCodes.has(code) || serverStates.test(code))) return true;
  if (file === sessionStartFile) return true;
  return driverMessages.test(error.message);
};

export const unreachable = (error: Error): UnavailableError => {
  const unavailable = new UnavailableError(`PostgreSQL is unavailable: ${error.message}`);
  unavailable.cause = error;
  return unavailable;
};

/**
 * Connection failures become UnavailableError: a 503 on the request path, and a store failure to the
 * consumers (src/core/store-failures.ts), which then restart rather than count the event; anything else is
 * a bug to report as such.
 */
export const orUnavailable = unavailableWhen(isConnectionFailure, unreachable);

export interface PostgresHandle {
  pool: pg.Pool;
  /** The adapter is done with the pool; the last one to release it ends it. Idempotent. */
  release: () => Promise<void>;
}

export interface PoolOptions {
  /** Connections at most (DATABASE_POOL_SIZE); the first adapter to open the pool sets it. */
  poolSize?: number;
}

const shared = new Map<string, { pool: pg.Pool; users: number }>();

/**
 * The time-outs every session of the service runs under, sent as startup parameters (docs/operations.md,
 * "A stalled process"). A transaction of this process holds the read horizon of every process on the
 * database while it is open, so a process frozen between two statements (SIGSTOP, a VM paused, a GC
 * pause, a swap storm) must lose its transactions within seconds, not hold every consumer until it
 * resumes; no transaction of the service waits on anything but the database between BEGIN and COMMIT, so
 * a legitimate one is never idle that long. The statement time-out bounds a statement stuck on a lock or
 * a slow plan; statements that may run long by design (migrations, index builds, swaps) lift it for
 * themselves (`unboundedStatements`).
 */
export const sessionTimeouts = {
  idleInTransactionMs: 5_000,
  statementMs: 30_000,
} as const;

/** A pool of at most `poolSize` connections; `newPool(url, 1, …)` is one connection that reopens itself. */
export const newPool = (url: string, poolSize: number, applicationName = 'observation-service'): pg.Pool => {
  const pool = new pg.Pool({
    connectionString: url,
    max: poolSize,
    // A server that does not answer, or a pool that stays exhausted, fails the request (503) rather than
    // holding it for ever.
    connectionTimeoutMillis: 10_000,
    idleTimeoutMillis: 30_000,
    application_name: applicationName,
    idle_in_transaction_session_timeout: sessionTimeouts.idleInTransactionMs,
    statement_timeout: sessionTimeouts.statementMs,
  });
  // An idle connection the server closed (a restart, a failover) reports here; without a listener it would
  // end the process. The next query opens a new connection, or fails with a 503.
  pool.on('error', () => undefined);
  // A connection that is checked out (a transaction between two statements, an index build) has no
  // listener of the pool's: when the server ends it there (pg_terminate_backend, a restart), node-pg emits
  // 'error' on the client itself, which with no listener ends the process. Each connection gets one for its
  // whole life; the error still fails the next statement on it (a 503), and the pool drops it on release.
  pool.on('connect', (client) => client.on('error', () => undefined));
  return pool;
};

/**
 * The pool for `url`, shared with every other adapter of this process that asked for it. It connects
 * lazily: this resolves even while the server is down, and each query then fails as unreachable.
 */
export const acquirePostgres = (
  url: string,
  { poolSize = defaultPoolSize }: PoolOptions = {},
): PostgresHandle => {
  let entry = shared.get(url);
  if (!entry) {
    entry = { pool: newPool(url, poolSize), users: 0 };
    shared.set(url, entry);
  }
  const mine = entry;
  mine.users += 1;
  return { pool: mine.pool, release: releaseOfShared(shared, url, mine, () => mine.pool.end()) };
};

/** Lifts the statement time-out for the rest of the transaction: a migration step, a table made, a swap. */
/** A parameter written into a statement as a literal: a finite number, a text, or an array of texts. */
const literal = (value: unknown): string => {
  if (typeof value === 'number' && Number.isFinite(value)) return String(value);
  if (typeof value === 'string') return pg.escapeLiteral(value);
  if (Array.isArray(value)) return `ARRAY[${value.map(literal).join(', ')}]::text[]`;
  throw new TypeError(`no literal for a parameter of type ${typeof value}`);
};

/**
 * Statements sent as one string in one round trip (the simple protocol), which the server runs in order as
 * one transaction, each with a snapshot of its own, rolled back whole when one fails. That protocol carries
 * no parameters, so each statement's `$n` are written into it as literals first.
 */
export const inOneRoundTrip = async (
  pool: pg.Pool,
  statements: readonly { text: string; values: readonly unknown[] }[],
): Promise<pg.QueryResult[]> => {
  const text = statements
    .map((statement) =>
      statement.text.replace(/\$(\d+)/g, (_, n: string) => literal(statement.values[Number(n) - 1])),
    )
    .join(';\n');
  const results = await orUnavailable(pool.query(text));
  return statements.length === 1 ? [results] : (results as unknown as pg.QueryResult[]);
};

export const unboundedStatements = 'SET LOCAL statement_timeout = 0';

export interface TransactionOptions {
  /** Statements that may run long by design (DDL, a tenant's copy): no statement time-out for them. */
  unbounded?: boolean;
}

/**
 * Runs `work` in one transaction on one connection of the pool: committed when it resolves, else rolled
 * back. `work` must only run statements on `client`: anything else it awaits (a request, a timer, another
 * connection of the pool) keeps the transaction, and so every reader's horizon, open meanwhile.
 */
export const inTransaction = async <T>(
  pool: pg.Pool,
  work: (client: pg.PoolClient) => Promise<T>,
  { unbounded = false }: TransactionOptions = {},
): Promise<T> => {
  const client = await orUnavailable(pool.connect());
  let broken = false;
  try {
    await client.query('BEGIN');
    if (unbounded) await client.query(unboundedStatements);
    const result = await work(client);
    await client.query('COMMIT');
    return result;
  } catch (error) {
    try {
      await client.query('ROLLBACK');
    } catch {
      // The connection is gone: it must not go back to the pool.
      broken = true;
    }
    throw isConnectionFailure(error) ? unreachable(error) : error;
  } finally {
    client.release(broken);
  }
};
