import { expect } from 'chai';
import { nextAttemptInMs } from '../../src/duties.js';

describe('the worker lease schedule', () => {
  const ttl = 15_000;
  const now = 1_000_000;

  it('renews a held lease every third of its TTL', () => {
    expect(nextAttemptInMs(ttl, now, { until: now + ttl, owned: true })).to.equal(5_000);
  });

  it('asks again at the end of a held lease that failed to renew, so its duties stop on time', () => {
    expect(nextAttemptInMs(ttl, now, { until: now + 2_000, owned: true })).to.equal(2_000);
  });

  it('asks for the holder’s lease just after it runs out, not up to a third of the TTL later', () => {
    // The holder renewed 11 s ago and was killed: its lease ends in 4 s, before the next third (5 s).
    expect(nextAttemptInMs(ttl, now, { until: now + 4_000, owned: false })).to.equal(4_050);
    expect(nextAttemptInMs(ttl, now, { until: now + 12_000, owned: false })).to.equal(5_000);
  });

  it('does not ask again at once for a lease end already past', () => {
    expect(nextAttemptInMs(ttl, now, { until: now - 1_000, owned: true })).to.equal(5_000);
    expect(nextAttemptInMs(ttl, now, { until: now - 1_000, owned: false })).to.equal(5_000);
  });
});
