import { expect } from 'chai';
import { join } from 'node:path';
import { tempDir } from '../support/adapters.js';
import { startTs, stop } from '../support/process.js';
import { request } from '../support/server.js';
import { createTenant, startServiceProcess } from '../support/service-process.js';
import { eventually } from '../support/wait.js';

/**
 * The embedded store while another process on the same DATA_DIR holds its write lock and is frozen
 * (SIGSTOP) in the middle of a write: a write request answers 503 problem+json with Retry-After once the
 * retries' 3 s are up (src/core/sqlite-busy.ts), never 500, and meanwhile the service keeps answering
 * other requests, since no call waits inside SQLite for more than 50 ms. Before, each write held the event
 * loop for the 5 s busy time-out and then answered 500 "database is locked".
 */

/** The longest a write may take to give up (3 s of retries), on a busy two-core machine. */
const writeBoundMs = 6_000;
/** The longest another request may wait meanwhile: a few 50 ms waits inside SQLite, and a loaded machine. */
const otherRequestBoundMs = 1_000;

/** Asks `url` every 50 ms until `until` settles; the slowest answer's time. */
const slowestWhile = async (url: string, until: Promise<unknown>): Promise<number> => {
  let done = false;
  void until.finally(() => (done = true));
  let slowest = 0;
  while (!done) {
    const started = Date.now();
    const response = await fetch(url);
    await response.arrayBuffer();
    slowest = Math.max(slowest, Date.now() - started);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  return slowest;
};

describe('the embedded store with another process frozen while it holds the write lock', () => {
  it('answers writes 503 with Retry-After within the bound and other requests at once, then recovers', async function () {
    this.timeout(60_000);
    const { dir, remove } = tempDir();
    const service = await startServiceProcess(dir, { RATE_LIMIT: 'off', LOG_LEVEL: 'warn' });
    const holder = startTs('test/support/hold-write-lock.ts', [
      join(dir, 'events.db'),
      join(dir, 'idempotency.db'),
    ]);
    try {
      const { tenantId, headers } = await createTenant(service.url, 'busy');
      const observations = `${service.url}/v1/tenants/${tenantId}/observations`;
      const body = { observedAt: '2026-05-01T09:30:00Z', notes: 'while locked' };
      await eventually(
        () => Promise.resolve(holder.output.stdout.includes('locked 2') || undefined),
        20_000,
        'the other process to hold the locks',
      );
      holder.child.kill('SIGSTOP');

      const timed = async (init: Parameters<typeof request>[1]) => {
        const started = Date.now();
        const response = await request(observations, init);
        return { response, ms: Date.now() - started };
      };
      const write = timed({ method: 'POST', headers, body });
      const slowest = await slowestWhile(`${service.url}/health/live`, write);
      const { response, ms } = await write;
      expect(response.status, JSON.stringify(response.body)).to.equal(503);
      expect(response.headers.get('content-type')).to.match(/^application\/problem\+json/);
      expect(response.body.type).to.equal('/problems/store-busy');
      expect(Number(response.headers.get('retry-after'))).to.be.at.least(1);
      expect(ms).to.be.below(writeBoundMs);
      expect(slowest).to.be.below(otherRequestBoundMs);

      // An Idempotency-Key claim waits on the other file the same way.
      const keyed = await timed({
        method: 'POST',
        headers: { ...headers, 'Idempotency-Key': 'busy-key-1' },
        body,
      });
      expect(keyed.response.status, JSON.stringify(keyed.response.body)).to.equal(503);
      expect(keyed.response.headers.get('retry-after')).to.not.equal(null);
      expect(keyed.ms).to.be.below(writeBoundMs);

      // Reads go on: WAL readers never wait for a writer.
      const list = await timed({ headers });
      expect(list.response.status).to.equal(200);
      expect(list.ms).to.be.below(otherRequestBoundMs);

      // The frozen process dies: its locks go with it, and the same write succeeds.
      holder.child.kill('SIGKILL');
      await holder.exited;
      const after = await timed({
        method: 'POST',
        headers: { ...headers, 'Idempotency-Key': 'busy-key-1' },
        body,
      });
      expect(after.response.status, JSON.stringify(after.response.body)).to.equal(201);
      expect(service.child.exitCode).to.equal(null);
      expect(service.output.stdout).not.to.include('unhandled error');
      console.log(
        `      write answered 503 after ${ms} ms (keyed ${keyed.ms} ms); slowest /health/live meanwhile ${slowest} ms; list ${list.ms} ms`,
      );
    } finally {
      if (holder.child.exitCode === null && holder.child.signalCode === null) {
        holder.child.kill('SIGKILL');
        await holder.exited;
      }
      await stop(service.child, service.exited);
      remove();
    }
  });
});
