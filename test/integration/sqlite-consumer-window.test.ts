import { expect } from 'chai';
import { join } from 'node:path';
import { openSqliteEventStore } from '../../src/eventstore/sqlite.js';
import { tempDir } from '../support/adapters.js';
import { anEvent, eventually, uniqueTenant } from '../support/events.js';

/**
 * A consumer group of the embedded store with several events in the handler at once: a slow event holds
 * one place, not a chunk that waits for its slowest, and the checkpoint still never passes it unsettled.
 */
describe('the embedded store: a consumer group with a slow event in hand', () => {
  it('hands the events after it to the free places, and moves the checkpoint past it only once it settles', async function () {
    this.timeout(30_000);
    const { dir, remove } = tempDir();
    const store = openSqliteEventStore(join(dir, 'events.db'));
    const tenant = uniqueTenant();
    try {
      await store.ensurePersistentSubscription('window', { startFrom: 'start', maxRetryCount: 1 });
      const slow = await store.appendToStream(
        `thing-${tenant}_slow`,
        [anEvent('Slow', {}, tenant)],
        'no_stream',
      );
      let last = 0;
      for (let n = 0; n < 6; n += 1) {
        const appended = await store.appendToStream(
          `thing-${tenant}_f${n}`,
          [anEvent('Fast', {}, tenant)],
          'no_stream',
        );
        last = appended.lastPosition;
      }
      let fast = 0;
      let checkpointWhileSlow: number | null = null;
      let slowDone = false;
      const consumer = store.subscribePersistent(
        'window',
        async ({ event }) => {
          if (event.type === 'Fast') {
            fast += 1;
            return { kind: 'ack' };
          }
          // Four in hand: in chunks, the three fast ones beside this one would wait for it, and the other
          // three would not start while it waits for them.
          await eventually(() => fast === 6, 10_000);
          checkpointWhileSlow = await store.groupCheckpoint!('window');
          slowDone = true;
          return { kind: 'ack' };
        },
        { concurrency: 4 },
      );
      await eventually(() => slowDone, 15_000);
      await eventually(async () => (await store.groupCheckpoint!('window')) === last);
      await consumer.stop();
      expect(checkpointWhileSlow, 'the checkpoint while the slow event was in hand').to.be.below(
        slow.lastPosition,
      );
    } finally {
      await store.close();
      remove();
    }
  });
});
