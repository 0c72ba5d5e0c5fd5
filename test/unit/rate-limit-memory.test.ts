import { expect } from 'chai';
import { maxMemoryKeys, memoryWindows } from '../../src/http/rate-limit.js';

const minute = 60_000;

describe('the request rate limit in memory', () => {
  it('forgets the least recently seen key once it holds more than its bound', async () => {
    const limiter = memoryWindows(2).limiter({ limit: 1, windowMs: minute });
    await limiter.hit('address:a');
    expect(await limiter.hit('address:a')).to.include({ refused: true });
    await limiter.hit('address:b');
    await limiter.hit('address:c');
    // a was let go for c: it starts a fresh window.
    expect(await limiter.hit('address:a')).to.include({ refused: false });
  });

  it('keeps a key that was seen again, and lets the older one go', async () => {
    const limiter = memoryWindows(2).limiter({ limit: 1, windowMs: minute });
    await limiter.hit('address:a');
    await limiter.hit('address:b');
    await limiter.hit('address:a');
    await limiter.hit('address:c');
    expect(await limiter.hit('address:a')).to.include({ refused: true });
    expect(await limiter.hit('address:b')).to.include({ refused: false });
  });

  it(`holds at most ${maxMemoryKeys} keys by default`, async () => {
    const limiter = memoryWindows().limiter({ limit: 1, windowMs: minute });
    await limiter.hit('address:first');
    for (let i = 0; i < maxMemoryKeys; i++) await limiter.hit(`address:${i}`);
    expect(await limiter.hit('address:first')).to.include({ refused: false });
  });
});
