import { expect } from 'chai';
import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import { openPostgresRequestWindows } from '../../src/http/rate-limit-postgres.js';
import { schemaVersion } from '../../src/postgres/migrate.js';
import { memoryWindows, type RequestWindows } from '../../src/http/rate-limit.js';
import { describePostgres } from '../support/postgres.js';

/**
 * What every store of the request rate limit's windows does; keys are fresh per test. The windows follow
 * the process's clock (rate-limiter-flexible's), so the tests that watch one end use a window of 1 s.
 */
const requestWindowsContract = (open: () => Promise<RequestWindows>) => {
  let windows: RequestWindows;
  let key: string;
  const second = 1000;
  const minute = 60_000;
  beforeEach(async () => {
    windows = await open();
    key = `principal:${randomUUID()}`;
  });
  afterEach(async () => windows.close());

  it('counts the requests of a key in a window that starts at its first request', async () => {
    const limiter = windows.limiter({ limit: 3, windowMs: minute });
    const first = await limiter.hit(key);
    expect(first).to.include({ remaining: 2, refused: false });
    expect(first.msBeforeReset).to.be.within(minute - 1000, minute);
    await sleep(20);
    const again = await limiter.hit(key);
    expect(again).to.include({ remaining: 1, refused: false });
    // The same window: it ends no later than it did.
    expect(again.msBeforeReset).to.be.at.most(first.msBeforeReset);
    expect(await limiter.hit(`${key}-other`)).to.include({ remaining: 2, refused: false });
  });

  it('refuses the requests past the limit until the window ends', async () => {
    const limiter = windows.limiter({ limit: 2, windowMs: minute });
    await limiter.hit(key);
    expect(await limiter.hit(key)).to.include({ remaining: 0, refused: false });
    for (let i = 0; i < 3; i++) {
      const refused = await limiter.hit(key);
      expect(refused).to.include({ remaining: 0, refused: true });
      expect(refused.msBeforeReset).to.be.within(1, minute);
    }
  });

  it('starts a new window once the last one ended', async () => {
    const limiter = windows.limiter({ limit: 2, windowMs: second });
    await limiter.hit(key);
    await limiter.hit(key);
    expect(await limiter.hit(key)).to.include({ refused: true });
    await sleep(second + 100);
    const fresh = await limiter.hit(key);
    expect(fresh).to.include({ remaining: 1, refused: false });
    expect(fresh.msBeforeReset).to.be.within(second - 200, second);
  });

  it('counts requests made at once exactly', async () => {
    const limiter = windows.limiter({ limit: 20, windowMs: minute });
    const counts = await Promise.all(Array.from({ length: 25 }, () => limiter.hit(key)));
    expect(counts.filter((count) => count.refused)).to.have.length(5);
    expect(counts.map((count) => count.remaining).sort((a, b) => a - b)).to.deep.equal([
      ...Array<number>(6).fill(0),
      ...Array.from({ length: 19 }, (_, i) => i + 1),
    ]);
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
      const policy = { limit: 2, windowMs: 60_000 };
      const [one, other] = await Promise.all([
        openPostgresRequestWindows(url),
        openPostgresRequestWindows(url),
      ]);
      try {
        expect(await one.limiter(policy).hit(key)).to.include({ remaining: 1 });
        expect(await other.limiter(policy).hit(key)).to.include({ remaining: 0, refused: false });
        expect(await one.limiter(policy).hit(key)).to.include({ refused: true });
      } finally {
        await Promise.all([one.close(), other.close()]);
      }
    });

    it("drops the hand-written windows' table of the release before rate-limiter-flexible", async () => {
      const windows = await openPostgresRequestWindows(url);
      const pool = new pg.Pool({ connectionString: url, max: 1 });
      try {
        expect(await schemaVersion(pool, 'request_rate_windows')).to.equal(3);
        const { rows } = await pool.query<{ table: string | null }>(
          "SELECT to_regclass('request_rate_windows')::text AS table",
        );
        expect(rows[0]?.table).to.equal(null);
      } finally {
        await Promise.all([windows.close(), pool.end()]);
      }
    });
  });
});
