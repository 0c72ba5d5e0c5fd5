import { expect } from 'chai';
import { randomUUID } from 'node:crypto';
import { openPostgresRequestWindows } from '../../src/http/rate-limit-postgres.js';
import { memoryWindows, type RequestWindows } from '../../src/http/rate-limit.js';
import { describePostgres } from '../support/postgres.js';

/** What every store of the request rate limit's windows does; keys are fresh per test. */
const requestWindowsContract = (open: () => Promise<RequestWindows>) => {
  let windows: RequestWindows;
  let key: string;
  const now = Date.UTC(2026, 4, 1, 12);
  const minute = 60_000;
  beforeEach(async () => {
    windows = await open();
    key = `principal:${randomUUID()}`;
  });
  afterEach(async () => windows.close());

  it('counts the requests of a key in a window that starts at its first request', async () => {
    expect(await windows.hit(key, now, minute)).to.deep.equal({ count: 1, resetAt: now + minute });
    expect(await windows.hit(key, now + 10_000, minute)).to.deep.equal({ count: 2, resetAt: now + minute });
    expect(await windows.hit(`${key}-other`, now + 10_000, minute)).to.deep.equal({
      count: 1,
      resetAt: now + 10_000 + minute,
    });
  });

  it('starts a new window once the last one ended', async () => {
    await windows.hit(key, now, minute);
    await windows.hit(key, now + 1, minute);
    expect(await windows.hit(key, now + minute, minute)).to.deep.equal({
      count: 1,
      resetAt: now + 2 * minute,
    });
  });

  it('counts requests made at once exactly', async () => {
    const counts = await Promise.all(Array.from({ length: 20 }, () => windows.hit(key, now, minute)));
    expect(counts.map((window) => window.count).sort((a, b) => a - b)).to.deep.equal(
      Array.from({ length: 20 }, (_, i) => i + 1),
    );
  });
};

describe('RequestWindows contract', () => {
  describe('in memory', () => {
    requestWindowsContract(() => Promise.resolve(memoryWindows()));
  });

  describePostgres('on PostgreSQL', (url) => {
    requestWindowsContract(() => openPostgresRequestWindows(url));

    it('shares the counts with every instance on the database', async () => {
      const key = `principal:${randomUUID()}`;
      const now = Date.UTC(2026, 4, 1, 12);
      const [one, other] = await Promise.all([
        openPostgresRequestWindows(url),
        openPostgresRequestWindows(url),
      ]);
      try {
        await one.hit(key, now, 60_000);
        expect((await other.hit(key, now + 1, 60_000)).count).to.equal(2);
      } finally {
        await Promise.all([one.close(), other.close()]);
      }
    });
  });
});
