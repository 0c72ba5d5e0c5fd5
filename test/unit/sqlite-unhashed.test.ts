import Database from 'better-sqlite3';
import { expect } from 'chai';
import { join } from 'node:path';
import { openSqliteEventStore } from '../../src/eventstore/sqlite.js';
import { tempDir } from '../support/adapters.js';
import { anEvent } from '../support/events.js';

/*
 * A store written before events were chained has events without a hash; opening it chains them in commit
 * order, and from then on an open finds that nothing lacks a hash through a partial index, not by reading
 * every event.
 */
describe('the embedded event store, opened over events without a hash', () => {
  it('chains them as they were first chained, and later opens look them up by index', async () => {
    const { dir, remove } = tempDir();
    const file = join(dir, 'events.db');
    try {
      const store = openSqliteEventStore(file);
      for (const id of ['a', 'b', 'c'])
        await store.appendToStream(
          `thing-t_1_${id}`,
          [anEvent('Made', { id }, 't_1'), anEvent('Changed', { id }, 't_1')],
          'no_stream',
        );
      await store.close();
      const db = new Database(file);
      const hashes = () => db.prepare('SELECT position, hash FROM events ORDER BY position').all();
      const chained = hashes();
      db.prepare('UPDATE events SET hash = NULL WHERE position > 2').run();
      db.exec('DROP INDEX IF EXISTS events_unhashed');
      await openSqliteEventStore(file).close();
      expect(hashes()).to.deep.equal(chained);
      const plan = db
        .prepare('EXPLAIN QUERY PLAN SELECT * FROM events WHERE hash IS NULL ORDER BY position')
        .all() as { detail: string }[];
      expect(plan.map(({ detail }) => detail).join('; ')).to.contain('USING INDEX events_unhashed');
      db.close();
    } finally {
      remove();
    }
  });
});
