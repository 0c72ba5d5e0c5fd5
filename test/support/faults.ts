import Database from 'better-sqlite3';
import type { EventStore } from '../../src/eventstore/port.js';

/**
 * A real event store whose appends to some streams fail, while `full` is on, exactly as better-sqlite3
 * fails them when the disk is full: a SqliteError with code SQLITE_FULL, nothing written.
 */
export const diskFullOn = (streamPrefix: string) => {
  const fault = { full: false, refused: 0 };
  const wrap = (store: EventStore): EventStore => ({
    ...store,
    appendToStream: (streamName, events, expectedVersion) => {
      if (fault.full && streamName.startsWith(streamPrefix)) {
        fault.refused += 1;
        return Promise.reject(new Database.SqliteError('database or disk is full', 'SQLITE_FULL'));
      }
      return store.appendToStream(streamName, events, expectedVersion);
    },
  });
  return { fault, wrap };
};
