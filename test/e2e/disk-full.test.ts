import { expect } from 'chai';
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { closeSync, mkdirSync, mkdtempSync, openSync, rmdirSync, rmSync, writeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openSqliteEventStore } from '../../src/eventstore/sqlite.js';
import { anEvent, eventually, uniqueTenant } from '../support/events.js';
import { testImage } from '../support/images.js';
import { request } from '../support/server.js';
import { createTenant, platformKey, startServiceProcess } from '../support/service-process.js';

/** Writes a file until the file system says ENOSPC. */
const fill = (file: string) => {
  const fd = openSync(file, 'w');
  try {
    for (const size of [1024 * 1024, 64 * 1024, 4096, 512]) {
      try {
        for (;;) writeSync(fd, Buffer.alloc(size, 1));
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== 'ENOSPC') throw error;
      }
    }
  } finally {
    closeSync(fd);
  }
};

describe('a service whose disk fills up (a real 24 MB tmpfs as DATA_DIR)', function () {
  this.timeout(90_000);
  const mountPoint = mkdtempSync(join(tmpdir(), 'obs-full-'));
  let mounted = false;

  before(function () {
    try {
      execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=24m,mode=0700', 'tmpfs', mountPoint], {
        stdio: 'pipe',
      });
      mounted = true;
    } catch (error) {
      console.log(
        `      skipped: mounting a tmpfs is not permitted here (${(error as Error).message.trim()})`,
      );
      this.skip();
    }
  });
  after(() => {
    if (mounted) execFileSync('umount', [mountPoint]);
    rmdirSync(mountPoint);
  });

  it('fails every append of a group commit on SQLITE_FULL, writes none of them, and appends again once space is back', async () => {
    const dir = join(mountPoint, 'store');
    mkdirSync(dir);
    const store = openSqliteEventStore(join(dir, 'events.db'));
    const tenantId = uniqueTenant();
    const big = () => anEvent('Padded', { pad: randomBytes(20_000).toString('hex') }, tenantId);
    try {
      await store.appendToStream('s-0', [anEvent('Small', {}, tenantId)], 'any');
      const filler = join(mountPoint, 'filler');
      fill(filler);
      // Four appends in one turn of the event loop: one transaction, one group commit.
      const outcomes = await Promise.allSettled(
        [1, 2, 3, 4].map((n) => store.appendToStream(`s-${n}`, [big(), big()], 'any')),
      );
      expect(
        outcomes.map((o) => (o.status === 'rejected' ? (o.reason as { code?: string }).code : 'stored')),
      ).to.deep.equal(['SQLITE_FULL', 'SQLITE_FULL', 'SQLITE_FULL', 'SQLITE_FULL']);
      expect(await store.headPosition()).to.equal(1);
      expect((await store.readAll({})).events.map((e) => e.streamName)).to.deep.equal(['s-0']);
      rmSync(filler);
      // The same store, the same connection: no reopen.
      await store.appendToStream('s-5', [big()], 'any');
      expect((await store.readAll({})).events.map((e) => e.streamName)).to.deep.equal(['s-0', 's-5']);
    } finally {
      await store.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('answers writes 503 store-unavailable with Retry-After and readiness 503, and recovers without a restart', async () => {
    const dataDir = join(mountPoint, 'data');
    const service = await startServiceProcess(dataDir, { SHUTDOWN_TIMEOUT: '2s' });
    try {
      const { tenantId, headers } = await createTenant(service.url, 'full');
      const observations = `${service.url}/v1/tenants/${tenantId}/observations`;
      // About 23 KB each, so that the WAL soon has to grow to take more.
      const big = (label: string) => ({
        observedAt: '2026-05-01T09:30:00Z',
        notes: `${label} ${randomBytes(4000).toString('hex')}`,
        attributes: Object.fromEntries(
          Array.from({ length: 7 }, (_, i) => [`k${i}`, randomBytes(1000).toString('hex')]),
        ),
      });
      const label = (notes: string) => notes.split(' ')[0];
      const before = await request(observations, { method: 'POST', body: big('before'), headers });
      expect(before.status, JSON.stringify(before.body)).to.equal(201);
      const image = await testImage({ width: 300, height: 200, format: 'png', background: 90, blur: 2 });

      const filler = join(mountPoint, 'filler');
      fill(filler);

      // Writes the WAL still has room for are stored (and answered 201); the first it has none for is refused.
      const stored = ['before'];
      let refused = await request(observations, { method: 'POST', body: big('full0'), headers });
      for (let n = 1; refused.status === 201 && n < 200; n++) {
        stored.push(label(refused.body.notes as string)!);
        refused = await request(observations, { method: 'POST', body: big(`full${n}`), headers });
      }
      expect(refused.status, JSON.stringify(refused.body)).to.equal(503);
      expect(refused.body).to.deep.include({ type: '/problems/store-unavailable', status: 503 });
      expect(refused.body.detail).to.match(/SQLITE_FULL/);
      expect(refused.headers.get('retry-after')).to.match(/^\d+$/);
      const upload = await request(`${observations}/${before.body.id}/media`, {
        method: 'POST',
        rawBody: image,
        headers: { ...headers, 'content-type': 'application/octet-stream' },
      });
      expect(upload.status).to.equal(503);
      expect(upload.body.detail).to.match(/ENOSPC/);
      expect(upload.headers.get('retry-after')).to.match(/^\d+$/);
      const keyed = await request(observations, {
        method: 'POST',
        body: big('with-a-key'),
        headers: { ...headers, 'Idempotency-Key': 'full-disk-1' },
      });
      expect(keyed.status).to.equal(503);
      const ready = await request(`${service.url}/health/ready`, { headers: { 'X-API-Key': platformKey } });
      expect(ready.status).to.equal(503);
      expect(ready.body.checks.storage.status).to.equal('fail');
      expect(ready.body.checks.storage.error).to.match(/ENOSPC/);
      expect((await request(`${service.url}/health/live`)).status).to.equal(200);

      rmSync(filler);
      const freed = Date.now();

      const after = await request(observations, { method: 'POST', body: big('after'), headers });
      expect(after.status).to.equal(201);
      const retried = await request(observations, {
        method: 'POST',
        body: big('with-a-key'),
        headers: { ...headers, 'Idempotency-Key': 'full-disk-1' },
      });
      expect(retried.status).to.equal(201);
      expect(
        (
          await request(`${observations}/${before.body.id}/media`, {
            method: 'POST',
            rawBody: image,
            headers: { ...headers, 'content-type': 'application/octet-stream' },
          })
        ).status,
      ).to.equal(201);
      await eventually(async () => (await request(`${service.url}/health/ready`)).status === 200, 20_000);
      console.log(
        `      ${stored.length - 1} writes fitted after the disk filled; ready again ${Date.now() - freed} ms after the space came back`,
      );

      // Nothing of the refused writes was stored: the list holds exactly the writes answered 201.
      const list = await request(
        `${observations}?limit=100&minPosition=${retried.headers.get('x-position')}`,
        { headers },
      );
      expect(list.status).to.equal(200);
      expect(list.body.data.map((o: { notes: string }) => label(o.notes)).sort()).to.deep.equal(
        [...stored, 'after', 'with-a-key'].sort(),
      );
    } finally {
      service.child.kill('SIGTERM');
      expect(await service.exited).to.equal(0);
    }
  });
});
