import { expect } from 'chai';
import { ThreadFailedError, threadPool } from '../../src/core/thread-pool.js';

/** A thread that echoes its input after `input.ms` of busy work (test/fixtures/threads/busy.ts). */
const busy = new URL('../fixtures/threads/busy.ts', import.meta.url);
const throws = new URL('../fixtures/threads/throws.ts', import.meta.url);

describe('the thread pool', function () {
  this.timeout(30_000);

  it('runs tasks in threads, at most `size` at once, each thread started once and kept', async () => {
    const pool = threadPool<{ ms: number; n: number }, { n: number; thread: number }>({
      script: busy,
      size: 2,
    });
    try {
      const signal = new AbortController().signal;
      const results = await Promise.all(
        Array.from({ length: 6 }, (_, n) => pool.run({ ms: 50, n }, { signal })),
      );
      expect(results.map((r) => r.n)).to.deep.equal([0, 1, 2, 3, 4, 5]);
      expect(new Set(results.map((r) => r.thread)).size).to.equal(2);
      expect(pool.threads()).to.equal(2);
    } finally {
      await pool.close();
    }
  });

  it('ends a running task’s thread when its signal aborts, and starts a new one for the next task', async () => {
    const pool = threadPool<{ ms: number; n: number }, { n: number; thread: number }>({
      script: busy,
      size: 1,
    });
    try {
      const first = await pool.run({ ms: 1, n: 0 }, { signal: new AbortController().signal });
      const controller = new AbortController();
      const started = Date.now();
      const running = pool.run({ ms: 60_000, n: 1 }, { signal: controller.signal });
      setTimeout(() => controller.abort(new Error('time is up')), 200);
      const error = await running.then(
        () => null,
        (e: Error) => e,
      );
      expect(error?.message).to.equal('time is up');
      expect(Date.now() - started).to.be.below(5000);
      const next = await pool.run({ ms: 1, n: 2 }, { signal: new AbortController().signal });
      expect(next.thread).to.not.equal(first.thread);
      expect(pool.threads()).to.equal(1);
    } finally {
      await pool.close();
    }
  });

  it('gives up a waiting task when its signal aborts, without ending the busy thread', async () => {
    const pool = threadPool<{ ms: number; n: number }, { n: number; thread: number }>({
      script: busy,
      size: 1,
    });
    try {
      const signal = new AbortController().signal;
      const long = pool.run({ ms: 500, n: 0 }, { signal });
      const waiting = new AbortController();
      const queued = pool.run({ ms: 1, n: 1 }, { signal: waiting.signal });
      waiting.abort(new Error('no longer wanted'));
      expect(
        (
          await queued.then(
            () => null,
            (e: Error) => e,
          )
        )?.message,
      ).to.equal('no longer wanted');
      expect((await long).n).to.equal(0);
    } finally {
      await pool.close();
    }
  });

  it('fails the task of a thread that dies with ThreadFailedError naming why', async () => {
    const pool = threadPool<unknown, unknown>({ script: throws, size: 1 });
    try {
      const error = await pool.run({}, { signal: new AbortController().signal }).then(
        () => null,
        (e: Error) => e,
      );
      expect(error).to.be.instanceOf(ThreadFailedError);
      expect(error?.message).to.match(/thrown on purpose/);
    } finally {
      await pool.close();
    }
  });
});
