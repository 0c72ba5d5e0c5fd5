import { expect } from 'chai';
import type { FailureLimiterStore } from '../../src/auth/rate-limit.js';

/** What every adapter of the failed-authentication counters does; `open` gives a fresh, empty store. */
export const failureStoreContract = (
  open: () => Promise<{
    store: FailureLimiterStore;
    second: () => Promise<FailureLimiterStore>;
    close: () => Promise<void>;
  }>,
) => {
  let opened: Awaited<ReturnType<typeof open>>;
  beforeEach(async () => {
    opened = await open();
  });
  afterEach(async () => opened.close());

  const policy = { name: 'contract', max: 3, windowMs: 60_000 };

  it('lets max attempts through, then answers the wait until the window ends', async () => {
    const limiter = opened.store.limiter(policy);
    for (let i = 0; i < 3; i += 1) expect(await limiter.take('k')).to.equal(0);
    expect(await limiter.take('k')).to.be.within(55_000, 60_000);
    expect(await limiter.take('other')).to.equal(0);
  });

  it('counts attempts taken at once exactly', async () => {
    const limiter = opened.store.limiter(policy);
    const waits = await Promise.all(Array.from({ length: 10 }, () => limiter.take('k')));
    expect(waits.filter((w) => w === 0)).to.have.length(3);
  });

  it('takes an attempt back, and forgets a key on reset', async () => {
    const limiter = opened.store.limiter(policy);
    for (let i = 0; i < 3; i += 1) await limiter.take('k');
    await limiter.giveBack('k');
    expect(await limiter.take('k')).to.equal(0);
    expect(await limiter.take('k')).to.be.above(0);
    await limiter.reset('k');
    expect(await limiter.take('k')).to.equal(0);
  });

  it('keeps the counts of limits with other names apart', async () => {
    const a = opened.store.limiter(policy);
    const b = opened.store.limiter({ ...policy, name: 'other' });
    for (let i = 0; i < 3; i += 1) await a.take('k');
    expect(await b.take('k')).to.equal(0);
  });

  it('starts a new window once the old one ends', async () => {
    const limiter = opened.store.limiter({ ...policy, windowMs: 1000 });
    for (let i = 0; i < 3; i += 1) await limiter.take('k');
    expect(await limiter.take('k')).to.be.above(0);
    // A real wait: the adapters count windows on the system clock of their library, which takes no clock.
    await new Promise((resolve) => setTimeout(resolve, 1100));
    expect(await limiter.take('k')).to.equal(0);
  });

  it('shares the counts with another connection to the same store', async () => {
    const other = await opened.second();
    try {
      for (let i = 0; i < 3; i += 1) await opened.store.limiter(policy).take('k');
      expect(await other.limiter(policy).take('k')).to.be.above(0);
    } finally {
      await other.close();
    }
  });
};
