import { expect } from 'chai';
import { join } from 'node:path';
import { openSqliteEventStore } from '../../src/eventstore/sqlite.js';
import { tempDir } from '../support/adapters.js';
import { eventually } from '../support/events.js';
import { startTs, stop } from '../support/process.js';

describe('a process killed while appending', () => {
  it('loses no committed event and leaves no half-written append', async () => {
    const { dir, remove } = tempDir();
    const file = join(dir, 'events.db');
    try {
      const writer = startTs('test/support/append-until-killed.ts', [file]);
      await eventually(() => writer.output.stdout.split('\n').length > 300, 30_000);
      await stop(writer.child, writer.exited, 'SIGKILL');
      const acknowledged = writer.output.stdout.split('\n').filter(Boolean).map(Number);

      const store = openSqliteEventStore(file);
      const { events } = await store.readAll({ maxCount: 1_000_000 });
      const perStream = new Map<string, number>();
      for (const event of events) perStream.set(event.streamName, (perStream.get(event.streamName) ?? 0) + 1);
      for (const i of acknowledged) expect(perStream.get(`crash-t_crash_s${i}`), `stream ${i}`).to.equal(3);
      expect([...perStream.values()].every((count) => count === 3)).to.equal(true);
      expect(perStream.size).to.be.at.least(acknowledged.length);
      await store.close();
    } finally {
      remove();
    }
  });
});
