import { expect } from 'chai';
import { pino } from 'pino';
import { supervise, type Running } from '../../src/core/supervisor.js';
import { eventually } from '../support/events.js';

// Restarts 200 ms and 400 ms after the failures: long enough to look at the state in between.
const backOff = { initialMs: 200, maxMs: 1000, resetAfterMs: 10_000 };

/** A consumer whose run ends (with a failure) when the test says so. */
const controllable = () => {
  let fail: (error: Error) => void = () => undefined;
  const start = (): Running => ({
    done: new Promise<void>((_, reject) => (fail = reject)),
    stop: () => Promise.resolve(),
  });
  return { start, fail: (message: string) => fail(new Error(message)) };
};

describe('the consumer supervisor', () => {
  it('keeps the last failure after a restart, says when it recovered, and forgets that on the next failure', async () => {
    const consumer = controllable();
    const supervised = supervise('test', consumer.start, { logger: pino({ level: 'silent' }), backOff });
    try {
      expect(supervised.status()).to.include({ state: 'running', lastError: null, recoveredAt: null });

      consumer.fail('the disk is full');
      await eventually(() => supervised.status().restarts === 1 && supervised.status().state === 'running');
      const recovered = supervised.status();
      expect(recovered.lastError).to.equal('the disk is full');
      expect(Date.parse(recovered.recoveredAt!)).to.be.at.least(Date.parse(recovered.lastErrorAt!));

      // A new failure is current: no recovery to show until the next start runs.
      consumer.fail('the store went away');
      await eventually(() => supervised.status().lastError === 'the store went away');
      expect(supervised.status()).to.include({ state: 'retrying', recoveredAt: null });
      await eventually(() => supervised.status().restarts === 2 && supervised.status().state === 'running');
      expect(supervised.status().recoveredAt).to.not.equal(null);
    } finally {
      await supervised.stop();
    }
  });
});
