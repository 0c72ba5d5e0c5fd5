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

type ServiceProcess = Awaited<ReturnType<typeof startServiceProcess>>;

/**
 * Service processes on one new database, each naming its sessions (so that pg_stat_activity tells them
 * apart), with one keyring and one set of secrets: a process whose differ exits 2 at start
 * (docs/operations.md#shared-secrets). `stopAll` stops them and removes their directories.
 */
const fleet = (env: Record<string, string> = {}) => {
  const databaseUrl = createTestDatabase();
  const database = decodeURIComponent(new URL(databaseUrl).pathname.slice(1));
  const named = (application: string) => {
    const url = new URL(databaseUrl);
    url.searchParams.set('application_name', application);
    return url.toString();
  };
  const dirs: { dir: string; remove: () => void }[] = [];
  const keys = tempDir();
  dirs.push(keys);
  const keyring = join(keys.dir, 'signing-keys.json');
  rotateKeys(keyring);
  const running: ServiceProcess[] = [];
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
      ...env,
    });
    running.push(service);
    return service;
  };
  const stopAll = async () => {
    for (const service of running) {
      // A process left frozen by a failed test must run again to stop.
      service.child.kill('SIGCONT');
      if (service.child.exitCode === null) await stop(service.child, service.exited);
    }
    for (const dir of dirs) dir.remove();
  };
  return { databaseUrl, database, start, stopAll };
};

/** The JSON lines a process wrote to stdout from `from` on (its log). */
const logLines = (service: ServiceProcess, from = 0) =>
  service.output.stdout
    .slice(from)
    .split('\n')
    .filter((line) => line.startsWith('{'))
    .map((line) => JSON.parse(line) as { msg: string; err?: { message?: string } });

/** A new tenant on the API process, subscribed to observation.created at the receiver. */
const subscribedTenant = async (apiUrl: string, name: string, receiverUrl: string) => {
  const { tenantId, headers } = await createTenant(apiUrl, name);
  const webhook = await request(`${apiUrl}/v1/tenants/${tenantId}/webhooks`, {
    method: 'POST',
    headers,
    body: { url: receiverUrl, events: ['observation.created'], secret: webhookSecret },
  });
  expect(webhook.status, JSON.stringify(webhook.body)).to.equal(201);
  return { tenantId, headers, webhookId: webhook.body.id as string };
};

describePostgres('PostgreSQL: one worker frozen by SIGSTOP', () => {
  it('lets the other worker deliver and project within the bound, and the frozen one recovers on SIGCONT', async function () {
    this.timeout(90_000);
    const { databaseUrl, database, start, stopAll } = fleet();
    const receiver = await startReceiver(webhookSecret);
    const admin = new pg.Client({ connectionString: databaseUrl });
    await admin.connect();
    let loading = false;
    try {
      // The API first: it migrates the schema, so that the workers start on a made database.
      const api = await start('api', 'stall-api');
      // One at a time: each start has its own 20 s to get ready, also on a loaded machine.
      const stalled = await start('worker', 'stall-frozen');
      await start('worker', 'stall-other');
      const { tenantId, headers } = await subscribedTenant(api.url, 'stall', receiver.url);
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
        frozenAt = Date.now();
        await sleep(1500);
        held = await frozenSessions(admin, database, 'stall-frozen');
        if (held === 0) {
          stalled.child.kill('SIGCONT');
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
      const resumedLines = logLines(stalled, logBefore);
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
      await stopAll();
      await admin.end();
      await receiver.close();
    }
  });
  /*
   * Claims taken ahead (docs/webhooks.md#claiming-ahead) by a worker that is then frozen past the claim
   * time-out: the other worker takes them over and delivers them, and the frozen one, resumed, POSTs none of
   * them again, records no outcome on a claim it no longer holds, and still stops on SIGTERM. What may
   * arrive twice is what the frozen worker had POSTed without recording its outcome: the attempts in its
   * slots, and the successes whose outcomes waited for company (outcome-gate.ts, 20 ms), about as many again
   * with this receiver. Only an attempt already past its last look at the claim may POST after the resume.
   * Before: the resumed worker POSTed claims taken over meanwhile (its reads had waited across the freeze),
   * and a shutdown after it could wait for ever (a re-entered pass of the limiter lost queued tasks).
   */
  it('hands the claims a frozen worker took ahead to the other worker, and the resumed one POSTs none of them', async function () {
    this.timeout(120_000);
    // A 2 s receiver time-out makes the claim time-out 12 s (feature.ts), the budget of a claim ahead 5 s.
    const perSubscription = 4;
    const { start, stopAll } = fleet({
      WEBHOOK_TIMEOUT: '2s',
      WEBHOOK_CONCURRENCY_PER_SUBSCRIPTION: String(perSubscription),
    });
    // A receiver that takes 40 ms per delivery: a backlog drains slowly enough to be frozen in the middle.
    const receiver = await startReceiver(webhookSecret, () => ({ status: 204, afterMs: 40 }));
    const backlog = 400;
    try {
      const api = await start('api', 'claims-api');
      const frozen = await start('worker', 'claims-frozen');
      await start('worker', 'claims-other');
      const { tenantId, headers, webhookId } = await subscribedTenant(api.url, 'claims', receiver.url);
      const ids: string[] = [];
      for (let sent = 0; sent < backlog; sent += 20) {
        const created = await Promise.all(
          Array.from({ length: 20 }, () =>
            request(`${api.url}/v1/tenants/${tenantId}/observations`, {
              method: 'POST',
              headers,
              body: { observedAt: '2026-05-01T09:30:00Z', notes: 'claimed ahead' },
            }),
          ),
        );
        for (const one of created) {
          expect(one.status, JSON.stringify(one.body)).to.equal(201);
          ids.push(one.body.id as string);
        }
      }
      // Frozen once both workers deliver, with most of the backlog still to go.
      await receiver.waitFor(40, 30_000);
      frozen.child.kill('SIGSTOP');
      const frozenAt = Date.now();
      const receivedAtFreeze = receiver.received.length;
      const logBefore = frozen.output.stdout.length;
      const delivered = () =>
        new Set(
          receiver.received
            .filter((received) => received.verified)
            .map((received) => received.body?.data?.observationId as string),
        );
      // The other worker alone: what it claimed, then what the frozen one held, once its claims expire.
      await eventually(
        () => Promise.resolve(ids.every((id) => delivered().has(id)) || undefined),
        60_000,
        'every observation delivered while one worker is frozen',
      );
      const allDeliveredAfterMs = Date.now() - frozenAt;
      const countBeforeResume = receiver.received.length;
      frozen.child.kill('SIGCONT');
      // The resumed worker's claims ahead meet their slots over time: give it time to try.
      await sleep(5_000);
      const lines = logLines(frozen, logBefore);
      const releasedUnattempted = lines.filter((line) =>
        [
          'webhook claim waited too long for its slot; released unattempted',
          'webhook claim too old to POST on; released unattempted',
        ].includes(line.msg),
      ).length;
      const refused = lines.filter((line) => / refused: claim taken over$/.test(line.msg)).length;
      const afterResume = receiver.received.slice(countBeforeResume);
      const perObservation = new Map<string, number>();
      for (const received of receiver.received.filter((one) => one.verified)) {
        const id = received.body?.data?.observationId as string;
        perObservation.set(id, (perObservation.get(id) ?? 0) + 1);
      }
      const twice = [...perObservation.values()].filter((count) => count > 1).length;
      const failed = await request(
        `${api.url}/v1/tenants/${tenantId}/webhooks/${webhookId}/deliveries?status=failed`,
        { headers },
      );
      console.log(
        `      ${backlog} deliveries, worker frozen after ${receivedAtFreeze} had arrived; all delivered ${allDeliveredAfterMs} ms after the freeze; after SIGCONT: ${releasedUnattempted} claims ahead released unattempted, ${refused} outcomes or releases refused, ${afterResume.length} POSTs; ${twice} delivered twice`,
      );
      expect(releasedUnattempted, 'the frozen worker held claims ahead').to.be.greaterThan(0);
      expect(afterResume.length, 'POSTs after the resume').to.be.at.most(perSubscription);
      expect(twice, 'what the frozen worker had in flight').to.be.at.most(2 * perSubscription);
      expect(failed.status).to.equal(200);
      expect(failed.body.data, 'no late outcome recorded as a failure').to.deep.equal([]);
      expect(lines.filter((line) => /unhandled|uncaught/i.test(line.msg))).to.deep.equal([]);
      expect(frozen.child.exitCode).to.equal(null);
      // SIGTERM: it drains and exits within its shutdown time-out (10 s), not never.
      const stoppedAt = Date.now();
      const code = await Promise.race([stop(frozen.child, frozen.exited), sleep(20_000).then(() => 'hung')]);
      expect(code, `exit after ${Date.now() - stoppedAt} ms`).to.equal(0);
    } finally {
      await stopAll();
      await receiver.close();
    }
  });
});
