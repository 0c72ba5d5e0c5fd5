import { expect } from 'chai';
import { getEventListeners } from 'node:events';
import { abortable, semaphore } from '../../src/core/concurrency.js';

/** Lets every promise callback queued so far run. */
const settle = () => new Promise((resolve) => setImmediate(resolve));

/** The error the promise rejects with; fails the test when it resolves. */
const rejection = async (promise: Promise<unknown>): Promise<Error> => {
  try {
    await promise;
  } catch (error) {
    return error as Error;
  }
  throw new Error('expected a rejection');
};

/** Whether the promise has settled yet, without waiting for it. */
const state = async (promise: Promise<unknown>) => {
  let outcome = 'pending';
  promise.then(
    () => (outcome = 'resolved'),
    () => (outcome = 'rejected'),
  );
  await settle();
  return outcome;
};

describe('a semaphore', () => {
  it('grants as many slots as it has at once, and makes the next one wait for a release', async () => {
    const slots = semaphore(2);
    const live = new AbortController().signal;
    expect(await state(slots.acquire(live))).to.equal('resolved');
    expect(await state(slots.acquire(live))).to.equal('resolved');
    const third = slots.acquire(live);
    expect(await state(third)).to.equal('pending');
    slots.release();
    expect(await state(third)).to.equal('resolved');
    // The released slot went to the waiter, not back to the pool: everything is taken again.
    expect(await state(slots.acquire(live))).to.equal('pending');
  });

  it('wakes the waiters in the order they came', async () => {
    const slots = semaphore(1);
    const live = new AbortController().signal;
    await slots.acquire(live);
    const woken: string[] = [];
    const first = slots.acquire(live).then(() => woken.push('first'));
    const second = slots.acquire(live).then(() => woken.push('second'));
    slots.release();
    await first;
    expect(woken).to.deep.equal(['first']);
    slots.release();
    await second;
    expect(woken).to.deep.equal(['first', 'second']);
  });

  describe('when the signal aborts', () => {
    it('refuses at once without taking a slot if it aborted already', async () => {
      const slots = semaphore(1);
      const stopped = AbortSignal.abort();
      expect((await rejection(slots.acquire(stopped))).message).to.equal('stopping');
      expect(await state(slots.acquire(new AbortController().signal))).to.equal('resolved');
    });

    it('ends the wait, and a later release goes to the next waiter, not the one that left', async () => {
      const slots = semaphore(1);
      const live = new AbortController().signal;
      await slots.acquire(live);
      const leaving = new AbortController();
      const gone = slots.acquire(leaving.signal);
      const next = slots.acquire(live);
      leaving.abort();
      expect((await rejection(gone)).message).to.equal('stopping');
      expect(await state(next)).to.equal('pending');
      slots.release();
      expect(await state(next)).to.equal('resolved');
    });

    it('keeps the slot count: a waiter that left frees no slot and takes none', async () => {
      const slots = semaphore(1);
      const live = new AbortController().signal;
      await slots.acquire(live);
      const leaving = new AbortController();
      const gone = slots.acquire(leaving.signal);
      leaving.abort();
      await rejection(gone);
      slots.release();
      expect(await state(slots.acquire(live))).to.equal('resolved');
      expect(await state(slots.acquire(live))).to.equal('pending');
    });

    it('stops listening to the signal of a waiter that was woken', async () => {
      const slots = semaphore(1);
      const live = new AbortController().signal;
      await slots.acquire(live);
      const waiter = new AbortController();
      const woken = slots.acquire(waiter.signal);
      expect(getEventListeners(waiter.signal, 'abort')).to.have.length(1);
      slots.release();
      await woken;
      expect(getEventListeners(waiter.signal, 'abort')).to.have.length(0);
    });
  });
});

describe('abortable', () => {
  it('settles with the task when the signal does not abort', async () => {
    const live = new AbortController().signal;
    expect(await abortable(live, () => Promise.resolve(42))).to.equal(42);
    const failed = await rejection(abortable(live, () => Promise.reject(new Error('the task failed'))));
    expect(failed.message).to.equal('the task failed');
  });

  it("rejects with the signal's reason as soon as it aborts, while the task still runs", async () => {
    const controller = new AbortController();
    const never = abortable(controller.signal, () => new Promise<never>(() => {}));
    expect(await state(never)).to.equal('pending');
    controller.abort(new Error('timed out'));
    expect((await rejection(never)).message).to.equal('timed out');
  });

  it('does not start the task when the signal aborted already', async () => {
    let started = false;
    const task = () => {
      started = true;
      return Promise.resolve(1);
    };
    const refused = await rejection(abortable(AbortSignal.abort(new Error('stopped')), task));
    expect(refused.message).to.equal('stopped');
    expect(started).to.equal(false);
  });

  it('stops listening to the signal once the task settled', async () => {
    const controller = new AbortController();
    await abortable(controller.signal, () => Promise.resolve('done'));
    await settle();
    expect(getEventListeners(controller.signal, 'abort')).to.have.length(0);
  });
});
