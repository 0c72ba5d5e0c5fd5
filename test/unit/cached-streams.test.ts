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

  describe('when several calls come in one turn of the event loop', () => {
    it('answers them with one read, and a call made after that read was sent with another', async () => {
      let reads = 0;
      let appended = false;
      const counted = {
        readStream: (streamName: string, options?: { fromVersion?: number }) => {
          reads += 1;
          // What the store holds when the read is sent: a call made before then must see it.
          const holds = appended
            ? [{ streamName, streamVersion: 0, type: 'Happened' } as unknown as RecordedEvent]
            : [];
          return Promise.resolve((options?.fromVersion ?? 0) === 0 ? holds : []);
        },
      };
      const read = cachedViews(counted, { empty: 0, extend: (n, newer) => n + newer.length });
      const first = read('a');
      appended = true; // appended after the first call, before the read is sent: the read sees it
      const together = await Promise.all([first, read('a'), read('a')]);
      expect(together).to.deep.equal([1, 1, 1]);
      expect(reads).to.equal(1);
      expect(await read('a')).to.equal(1);
      expect(reads).to.equal(2);
    });
  });
});
