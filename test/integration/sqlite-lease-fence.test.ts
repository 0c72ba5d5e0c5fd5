import { expect } from 'chai';
import { join } from 'node:path';
import { isStoreFailure } from '../../src/core/store-failures.js';
import { openSqliteEventStore } from '../../src/eventstore/sqlite.js';
import { tempDir } from '../support/adapters.js';
import { anEvent, eventually, uniqueTenant } from '../support/events.js';
import { rejectionOf } from '../support/rejections.js';

/**
 * The worker lease fences the embedded store's consumer groups: a process that stalled past its lease,
 * while another took the lease over, has its group's commits refused when it resumes, so that it cannot
 * move a checkpoint or park an event under the new owner's feet. Two store instances on one file stand
 * for the two processes.
 */
describe('the embedded store: a consumer group under a lease another process took over', () => {
  it('refuses the stalled owner’s commit and leaves the checkpoint where it was', async function () {
    this.timeout(20_000);
    const { dir, remove } = tempDir();
    const file = join(dir, 'events.db');
    const stalled = openSqliteEventStore(file);
    const other = openSqliteEventStore(file);
    const tenant = uniqueTenant();
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    let handled = 0;
    try {
      expect((await stalled.acquireLease('worker', 'stalled', 200)).acquired).to.equal(true);
      await stalled.ensurePersistentSubscription('fenced', { startFrom: 'start', maxRetryCount: 1 });
      await stalled.appendToStream(`thing-${tenant}_a`, [anEvent('Happened', {}, tenant)], 'no_stream');
      const consumer = stalled.subscribePersistent('fenced', async () => {
        handled += 1;
        await gate;
        return { kind: 'ack' };
      });
      await eventually(() => handled === 1);
      // The lease runs out while the handler is held up, and the other process takes it.
      await eventually(async () => (await other.acquireLease('worker', 'other', 15_000)).acquired, 5_000);
      release();
      const failure = await rejectionOf(consumer.done);
      expect(failure, String(failure)).to.have.property('name', 'LeaseLostError');
      expect(isStoreFailure(failure)).to.equal(true);
      expect(await other.groupCheckpoint!('fenced')).to.equal(0);
    } finally {
      release();
      await stalled.close();
      await other.close();
      remove();
    }
  });

  it('does not fence a store that holds no lease', async () => {
    const { dir, remove } = tempDir();
    const store = openSqliteEventStore(join(dir, 'events.db'));
    try {
      const tenant = uniqueTenant();
      await store.ensurePersistentSubscription('free', { startFrom: 'start', maxRetryCount: 1 });
      const { lastPosition } = await store.appendToStream(
        `thing-${tenant}_a`,
        [anEvent('Happened', {}, tenant)],
        'no_stream',
      );
      const consumer = store.subscribePersistent('free', () => Promise.resolve({ kind: 'ack' }));
      await eventually(async () => (await store.groupCheckpoint!('free')) === lastPosition);
      await consumer.stop();
    } finally {
      await store.close();
      remove();
    }
  });
});
