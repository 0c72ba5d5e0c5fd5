import { expect } from 'chai';
import type { RecordedEvent } from '../../src/core/events.js';
import { cachedViews } from '../../src/eventstore/cached-streams.js';

/** A store of one-event streams that counts, per stream, the reads that started from the beginning. */
const countingStore = () => {
  const fromStart = new Map<string, number>();
  return {
    fromStart,
    readStream: (streamName: string, options?: { fromVersion?: number }) => {
      const from = options?.fromVersion ?? 0;
      if (from === 0) fromStart.set(streamName, (fromStart.get(streamName) ?? 0) + 1);
      const event = { streamName, streamVersion: 0, type: 'Happened' } as unknown as RecordedEvent;
      return Promise.resolve(from === 0 ? [event] : []);
    },
  };
};

describe('cached views of small streams', () => {
  describe('when more streams are read than are kept', () => {
    it('drops the one read longest ago, and keeps the others', async () => {
      const store = countingStore();
      const read = cachedViews(
        store,
        { empty: 0, extend: (n, newer) => n + newer.length },
        { maxStreams: 2 },
      );
      await read('a');
      await read('b');
      await read('a');
      await read('c'); // 'b' was read longest ago
      expect(await read('a')).to.equal(1);
      await read('b');
      expect(Object.fromEntries(store.fromStart)).to.deep.equal({ a: 1, b: 2, c: 1 });
    });
  });
});
