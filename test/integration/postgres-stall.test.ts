import { expect } from 'chai';
import { join } from 'node:path';
import { rotateKeys } from '../../src/auth/signing-keys.js';
import pg from 'pg';
import { tempDir } from '../support/adapters.js';
import { stop } from '../support/process.js';
import { createTestDatabase, describePostgres } from '../support/postgres.js';
import { startReceiver } from '../support/receiver.js';
import { request } from '../support/server.js';
import { createTenant, startServiceProcess } from '../support/service-process.js';
import { eventually, sleep } from '../support/wait.js';

const webhookSecret = 'whsec-stall-0123456789abcdef';

/**
 * One process frozen (SIGSTOP) in the middle of a transaction must not stop the others: its sessions are
 * ended by the server within `idle_in_transaction_session_timeout` (5 s, src/postgres/client.ts), which
 * frees the read horizon they held, so the other worker delivers and projects. Before the time-outs, a
 * frozen worker held every reader of every process for as long as it stayed frozen.
 *
 * The bound stated and checked: an event written while one worker is frozen is delivered by the other,
 * and a list with its minPosition answers 200, within 15 s of the freeze (5 s for the server to end the
 * frozen sessions, the rest for a busy two-core machine: the consumers' polling, the delivery itself).
 */
const stallBoundMs = 15_000;

/** The sessions of one application name that have sat `idle in transaction` with a transaction id for a while. */
const frozenSessions = async (admin: pg.Client, database: string, application: string): Promise<number> => {
  const { rows } = await admin.query<{ n: string }>(
    `SELECT count(*) AS n FROM pg_stat_activity
     WHERE datname = $1 AND application_name = $2 AND state = 'idle in transaction'
       AND backend_xid IS NOT NULL AND state_change < now() - interval '1 second'`,
    [database, application],
  );
  return Number(rows[0]?.n ?? 0);
};

describePostgres('PostgreSQL: one worker frozen by SIGSTOP', () => {
  it('lets the other worker deliver and project within the bound, and the frozen one recovers on SIGCONT', async function () {
    this.timeout(90_000);
    const databaseUrl = createTestDatabase();
    const database = decodeURIComponent(new URL(databaseUrl).pathname.slice(1));
    // Each process names its sessions, so that pg_stat_activity tells the frozen one's apart.
    const named = (application: string) => {
      const url = new URL(databaseUrl);
      url.searchParams.set('application_name', application);
      return url.toString();
    };
    const receiver = await startReceiver(webhookSecret);
    const admin = new pg.Client({ connectionString: databaseUrl });
    await admin.connect();
    const dirs: { dir: string; remove: () => void }[] = [];
    // One keyring for the three processes, as for their secrets: a process whose differ exits 2 at start
    // (docs/operations.md#shared-secrets).
    const keys = tempDir();
    dirs.push(keys);
    const keyring = join(keys.dir, 'signing-keys.json');
    rotateKeys(keyring);
    const running: Awaited<ReturnType<typeof startServiceProcess>>[] = [];
    const start = async (role: 'api' | 'worker', application: string) => {
      const dir = tempDir();
      dirs.push(dir);
      const service = await startServiceProcess(dir.dir, {
        ROLE: role,
        LOG_LEVEL: 'warn',
        DATABASE_URL: named(application),
        CURSOR_SECRET: 'stall-cursor-secret-0123456789abcdef',
        WEBHOOK_SECRET_KEY: 'stall-webhook-key-0123456789abcdef',
        IDEMPOTENCY_SECRET_KEY: 'stall-idempotency-key-0123456789ab',
        SIGNING_KEYS_FILE: keyring,
        RATE_LIMIT: 'off',
        WEBHOOK_ALLOW_HTTP: 'true',
        WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true',
        CONSISTENCY_TIMEOUT: '1s',
      });
      running.push(service);
      return service;
    };
    let frozen: Awaited<ReturnType<typeof startServiceProcess>> | null = null;
    let loading = false;
    try {
      // The API first: it migrates the schema, so that the workers start on a made database.
      const api = await start('api', 'stall-api');
      // One at a time: each start has its own 20 s to get ready, also on a loaded machine.
      const stalled = await start('worker', 'stall-frozen');
      await start('worker', 'stall-other');
      const { tenantId, headers } = await createTenant(api.url, 'stall');
      const webhook = await request(`${api.url}/v1/tenants/${tenantId}/webhooks`, {
        method: 'POST',
        headers,
        body: { url: receiver.url, events: ['observation.created'], secret: webhookSecret },
      });
      expect(webhook.status, JSON.stringify(webhook.body)).to.equal(201);
      const observe = async (notes: string) => {
        const created = await request(`${api.url}/v1/tenants/${tenantId}/observations`, {
          method: 'POST',
          headers,
          body: { observedAt: '2026-05-01T09:30:00Z', notes },
        });
        expect(created.status, JSON.stringify(created.body)).to.equal(201);
        return { id: created.body.id as string, position: created.headers.get('x-position')! };
      };
      const deliveredAt = (id: string) =>
        receiver.received.find((received) => received.verified && received.body?.data?.observationId === id)
          ?.at;
      const warmUp = await observe('before the stall');
      await eventually(() => Promise.resolve(deliveredAt(warmUp.id)), 30_000, 'the first delivery');

      // Writes of another tenant keep both workers' projections committing, so that a SIGSTOP finds the
      // worker inside a transaction; it is frozen again until one does.
      loading = true;
      const other = await createTenant(api.url, 'load');
      const load = (async () => {
        while (loading) {
          await request(`${api.url}/v1/tenants/${other.tenantId}/observations`, {
            method: 'POST',
            headers: other.headers,
            body: { observedAt: '2026-05-01T09:30:00Z', notes: 'load' },
          }).catch(() => undefined);
        }
      })();
      let frozenAt = 0;
      let held = 0;
      // Usually the first SIGSTOP; the loop is bounded in time, not in tries, to fit the test's budget.
      const tryUntil = Date.now() + 25_000;
      for (let attempt = 0; held === 0 && Date.now() < tryUntil; attempt += 1) {
        stalled.child.kill('SIGSTOP');
        frozen = stalled;
        frozenAt = Date.now();
        await sleep(1500);
        held = await frozenSessions(admin, database, 'stall-frozen');
        if (held === 0) {
          stalled.child.kill('SIGCONT');
          frozen = null;
          await sleep(200 + attempt * 37);
        }
      }
      loading = false;
      await load;
      expect(held, 'the worker frozen inside a transaction').to.be.greaterThan(0);

      // While it stays frozen: a new event is delivered by the other worker and projected.
      const during = await observe('during the stall');
      await eventually(
        () => Promise.resolve(deliveredAt(during.id)),
        stallBoundMs,
        'the delivery during the stall',
      );
      const delivered = deliveredAt(during.id)! - frozenAt;
      const listed = await eventually(
        async () => {
          const list = await request(
            `${api.url}/v1/tenants/${tenantId}/observations?minPosition=${during.position}`,
            { headers },
          );
          return list.status === 200 ? Date.now() - frozenAt : undefined;
        },
        stallBoundMs,
        'the list with minPosition during the stall',
      );
      const sessionsLeft = await frozenSessions(admin, database, 'stall-frozen');
      expect(delivered).to.be.below(stallBoundMs);
      expect(listed).to.be.below(stallBoundMs);
      expect(sessionsLeft, 'the frozen worker’s transactions, ended by the server').to.equal(0);

      // Let it go: it finds its sessions ended, handles that as a lost connection, and serves again.
      await sleep(Math.max(0, 12_000 - (Date.now() - frozenAt)));
      const logBefore = stalled.output.stdout.length;
      stalled.child.kill('SIGCONT');
      frozen = null;
      const resumedAt = Date.now();
      const ready = await eventually(
        async () => ((await fetch(`${stalled.url}/health/ready`).catch(() => null))?.ok ? true : undefined),
        30_000,
        'the resumed worker ready again',
      );
      expect(ready).to.equal(true);
      const recovered = Date.now() - resumedAt;
      expect(stalled.child.exitCode, stalled.output.stderr.slice(-2000)).to.equal(null);
      expect(stalled.output.stdout).not.to.include('unhandled');
      // What it logged on resuming: its ended sessions, as failures it restarted from, none unhandled.
      const resumedLines = stalled.output.stdout
        .slice(logBefore)
        .split('\n')
        .filter((line) => line.startsWith('{'))
        .map((line) => JSON.parse(line) as { msg: string; err?: { message?: string } });
      expect(resumedLines.filter((line) => /unhandled|uncaught/i.test(line.msg))).to.deep.equal([]);
      const after = await observe('after the stall');
      await eventually(() => Promise.resolve(deliveredAt(after.id)), 30_000, 'the delivery after the stall');
      console.log(
        `      frozen ${held} session(s) in a transaction; during the stall: delivered after ${delivered} ms, listed after ${listed} ms (bound ${stallBoundMs} ms); resumed worker ready ${recovered} ms after SIGCONT`,
      );
      const messages = new Map<string, number>();
      for (const line of resumedLines) {
        const key = `${line.msg}${line.err?.message ? `: ${line.err.message.slice(0, 80)}` : ''}`;
        messages.set(key, (messages.get(key) ?? 0) + 1);
      }
      console.log(`      the resumed worker logged: ${JSON.stringify([...messages])}`);
    } finally {
      loading = false;
      if (frozen) frozen.child.kill('SIGCONT');
      for (const service of running)
        if (service.child.exitCode === null) await stop(service.child, service.exited);
      for (const dir of dirs) dir.remove();
      await admin.end();
      await receiver.close();
    }
  });
});
