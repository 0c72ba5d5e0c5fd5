import { expect } from 'chai';
import pg from 'pg';
import { UnavailableError } from '../../src/core/errors.js';
import { openPostgresEventStore } from '../../src/eventstore/postgres.js';
import { acquirePostgres, inTransaction, sessionTimeouts } from '../../src/postgres/client.js';
import { tempDir } from '../support/adapters.js';
import { eventually } from '../support/events.js';
import { stop } from '../support/process.js';
import { createTestDatabase, describePostgres } from '../support/postgres.js';
import { request } from '../support/server.js';
import { createTenant, startServiceProcess } from '../support/service-process.js';
import { rejectionOf } from '../support/rejections.js';

/**
 * The PostgreSQL store failing under the service, as an operator or an outage makes it fail: sessions
 * terminated by the server (pg_terminate_backend, a restart, a failover) and a database that refuses new
 * connections for a while (`ALTER DATABASE … ALLOW_CONNECTIONS false`). Requests meanwhile get 503, the
 * process lives through it, and once the store is back every acknowledged write is listed.
 */

/** The same server as `url`, on the `postgres` database: for the statements a database cannot make on itself. */
const adminUrl = (url: string): string => {
  const parsed = new URL(url);
  parsed.pathname = '/postgres';
  return parsed.toString();
};

const databaseOf = (url: string): string => decodeURIComponent(new URL(url).pathname.slice(1));

const withAdmin = async <T>(url: string, work: (admin: pg.Client) => Promise<T>): Promise<T> => {
  const admin = new pg.Client({ connectionString: adminUrl(url) });
  await admin.connect();
  try {
    return await work(admin);
  } finally {
    await admin.end();
  }
};

/** Ends every session on the database but the caller's; how many it ended. */
const terminateAll = async (admin: pg.Client, database: string): Promise<number> => {
  const { rows } = await admin.query<{ n: string }>(
    `SELECT count(pg_terminate_backend(pid)) AS n FROM pg_stat_activity
     WHERE datname = $1 AND pid <> pg_backend_pid()`,
    [database],
  );
  return Number(rows[0]?.n ?? 0);
};

describePostgres('PostgreSQL: the store failing under the service', () => {
  it('survives a session the server ends while a transaction holds it between two statements', async function () {
    this.timeout(20_000);
    const url = createTestDatabase();
    const handle = acquirePostgres(url, { poolSize: 2 });
    try {
      const outcome = await rejectionOf(
        inTransaction(handle.pool, async (client) => {
          const { rows } = await client.query<{ pid: number }>('SELECT pg_backend_pid() AS pid');
          // Ended from outside while no statement of this transaction runs: node-pg reports it as an
          // 'error' event on the checked-out client, which no listener of the pool's hears.
          await withAdmin(url, (admin) => admin.query('SELECT pg_terminate_backend($1)', [rows[0]!.pid]));
          await new Promise((resolve) => setTimeout(resolve, 300));
          await client.query('SELECT 1');
        }),
      );
      expect(outcome, String(outcome)).to.be.instanceOf(UnavailableError);
      // The pool dropped the dead connection: the next transaction runs on a new one.
      expect(
        await inTransaction(handle.pool, async (client) => (await client.query('SELECT 1 AS one')).rows),
      ).to.deep.equal([{ one: 1 }]);
    } finally {
      await handle.release();
    }
  });

  it('ends a transaction left idle within the sessions’ time-out, and the process sees it as unavailable', async function () {
    this.timeout(20_000);
    const url = createTestDatabase();
    const handle = acquirePostgres(url, { poolSize: 2 });
    try {
      const started = Date.now();
      const outcome = await rejectionOf(
        inTransaction(handle.pool, async (client) => {
          // A transaction id, as an append or a commit has: this is what holds every reader's horizon.
          await client.query('SELECT pg_current_xact_id()');
          // What a process frozen between two statements looks like to the server.
          await new Promise((resolve) => setTimeout(resolve, sessionTimeouts.idleInTransactionMs + 1_500));
          await client.query('SELECT 1');
        }),
      );
      expect(outcome, String(outcome)).to.be.instanceOf(UnavailableError);
      expect(Date.now() - started).to.be.below(sessionTimeouts.idleInTransactionMs + 5_000);
      // Every session has the statement time-out; a statement cut by it is unavailable, not a bug.
      const { rows } = await handle.pool.query<{ statement_timeout: string }>('SHOW statement_timeout');
      expect(rows[0]!.statement_timeout).to.equal(`${sessionTimeouts.statementMs / 1000}s`);
      const slow = await rejectionOf(
        inTransaction(handle.pool, async (client) => {
          await client.query('SET LOCAL statement_timeout = 100');
          await client.query('SELECT pg_sleep(2)');
        }),
      );
      expect(slow, String(slow)).to.be.instanceOf(UnavailableError);
    } finally {
      await handle.release();
    }
  });

  it('answers a database that refuses connections as unavailable, not as a failed statement', async function () {
    this.timeout(20_000);
    const url = createTestDatabase();
    const database = databaseOf(url);
    const store = await openPostgresEventStore(url);
    try {
      await withAdmin(url, async (admin) => {
        await admin.query(`ALTER DATABASE "${database}" ALLOW_CONNECTIONS false`);
        await terminateAll(admin, database);
      });
      try {
        const error = await rejectionOf(store.headPosition());
        expect(error, String(error)).to.be.instanceOf(UnavailableError);
      } finally {
        await withAdmin(url, (admin) => admin.query(`ALTER DATABASE "${database}" ALLOW_CONNECTIONS true`));
      }
      expect(await store.headPosition()).to.equal(0);
    } finally {
      await store.close();
    }
  });

  it('keeps serving through sessions terminated under load: 201 or 503, never an exit, every acknowledged write listed', async function () {
    this.timeout(60_000);
    const url = createTestDatabase();
    const database = databaseOf(url);
    const dir = tempDir();
    const service = await startServiceProcess(dir.dir, {
      DATABASE_URL: url,
      LOG_LEVEL: 'warn',
      RATE_LIMIT: 'off',
    });
    try {
      const { tenantId, headers } = await createTenant(service.url, 'terminated');
      const acknowledged: string[] = [];
      const statuses = new Map<number, number>();
      let killing = true;
      const killer = withAdmin(url, async (admin) => {
        while (killing) {
          await terminateAll(admin, database);
          await new Promise((resolve) => setTimeout(resolve, 50));
        }
      });
      const deadline = Date.now() + 5_000;
      try {
        while (Date.now() < deadline && service.child.exitCode === null) {
          const created = await request(`${service.url}/v1/tenants/${tenantId}/observations`, {
            method: 'POST',
            headers,
            body: { observedAt: new Date().toISOString(), attributes: { n: acknowledged.length } },
          }).catch(() => ({ status: 0, body: null }));
          statuses.set(created.status, (statuses.get(created.status) ?? 0) + 1);
          if (created.status === 201) acknowledged.push((created.body as { id: string }).id);
        }
      } finally {
        killing = false;
        await killer;
      }
      expect(service.child.exitCode, service.output.stderr.slice(-2000)).to.equal(null);
      expect([...statuses.keys()].filter((status) => status !== 201 && status !== 503)).to.deep.equal([]);
      await eventually(async () => (await fetch(`${service.url}/health/ready`)).status === 200, 30_000);
      const listed = new Set<string>();
      await eventually(async () => {
        for (let cursor: string | null = null, first = true; first || cursor; first = false) {
          const page = await request(
            `${service.url}/v1/tenants/${tenantId}/observations?limit=100${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`,
            { headers },
          );
          if (page.status !== 200) return false;
          for (const observation of page.body.data as { id: string }[]) listed.add(observation.id);
          cursor = page.body.nextCursor as string | null;
        }
        return acknowledged.every((id) => listed.has(id));
      }, 20_000).catch((error: unknown) => {
        const missing = acknowledged.filter((id) => !listed.has(id)).length;
        throw new Error(
          `${missing} of ${acknowledged.length} acknowledged writes not listed: ${String(error)}`,
        );
      });
    } finally {
      if (service.child.exitCode === null) await stop(service.child, service.exited);
      dir.remove();
    }
  });
});
