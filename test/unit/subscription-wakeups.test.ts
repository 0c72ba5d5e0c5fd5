import { expect } from 'chai';
import { join } from 'node:path';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { AppendSignal, CommitJournal } from '../../src/eventstore/append-signal.js';
import { openSqliteEventStore } from '../../src/eventstore/sqlite.js';
import { HeardCommits, OtherListeners, somethingAppended } from '../../src/eventstore/postgres-listener.js';
import { tempDir } from '../support/adapters.js';
import { anEvent, eventually } from '../support/events.js';

setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;
const heapAfterGc = () => {
  gc();
  gc();
  return process.memoryUsage().heapUsed;
};

/** One commit as a wake-up tells of it: the positions after `firstPosition` up to `lastPosition`, and its types. */
const commit = (firstPosition: number, lastPosition: number, ...types: string[]) => ({
  types: new Set(types),
  firstPosition,
  lastPosition,
});

describe('wake-ups of idle subscribers', () => {
  it('keep nothing alive after the wake: the heap does not grow with their number', async () => {
    const { dir, remove } = tempDir({ inMemory: true });
    const store = openSqliteEventStore(join(dir, 'events.db'), { pollMs: 60_000 });
    let batches = 0;
    let reachedPosition = 0;
    // Two idle subscribers of a type nobody appends: each append wakes both, and they go back to sleep.
    await store.ensurePersistentSubscription('idle', {
      startFrom: 'start',
      maxRetryCount: 1,
      filter: { eventTypes: ['Never'] },
    });
    const subscriptions = [
      store.subscribe({ after: 0, filter: { eventTypes: ['Never'] } }, (_events, lastPosition) => {
        batches += 1;
        reachedPosition = lastPosition;
        return Promise.resolve();
      }),
      store.subscribePersistent('idle', () => Promise.resolve({ kind: 'ack' })),
    ];
    const appendMany = async (count: number) => {
      for (let n = 0; n < count; n += 1) {
        await store.appendToStream(`thing-t_leak_${n % 50}`, [anEvent('Other', { n }, 't_leak')], 'any');
      }
    };
    await appendMany(1000); // warm up: statement caches, JIT
    const before = heapAfterGc();
    await appendMany(6000);
    const batchesBefore = batches;
    await eventually(() => reachedPosition === 7000);
    const grown = heapAfterGc() - before;
    // A position moved only past skipped events is handed over at most every skipReportMs, not per append:
    // each hand-over is a projection's checkpoint commit.
    expect(batches - batchesBefore, 'empty batches over 6,000 appends').to.be.below(3000);
    for (const subscription of subscriptions) await subscription.stop();
    await store.close();
    remove();
    expect(grown, `heap grew by ${(grown / 1024).toFixed(0)} KiB over 6,000 wake-ups`).to.be.below(
      1024 * 1024,
    );
  });
});

describe('wake-ups sent while a subscriber was not waiting', () => {
  it('are told to one that noted the count before its read, by whether they may concern its types', () => {
    const signal = new AppendSignal();
    const before = signal.notified;
    expect(signal.wokeSince(before, ['A'])).to.equal(false);
    signal.notify(commit(0, 1, 'B'));
    expect(signal.wokeSince(before, ['A']), 'another type only').to.equal(false);
    expect(signal.wokeSince(before, undefined), 'a reader of every type').to.equal(true);
    signal.notify(commit(1, 2, 'B', 'A'));
    expect(signal.wokeSince(before, ['A'])).to.equal(true);
    const later = signal.notified;
    expect(signal.wokeSince(later, ['A']), 'none since').to.equal(false);
    signal.notify(somethingAppended);
    expect(signal.wokeSince(later, ['A']), 'one that says nothing of what was appended').to.equal(true);
    const last = signal.notified;
    signal.notify(null);
    expect(signal.wokeSince(last, ['A']), 'another process wrote').to.equal(true);
  });

  it('leave out commits its read covered already, their wake-ups come late', () => {
    const signal = new AppendSignal();
    const before = signal.notified;
    signal.notify(commit(4, 6, 'A'));
    expect(signal.wokeSince(before, ['A'], 6), 'read up to 6').to.equal(false);
    expect(signal.wokeSince(before, ['A'], 5), 'read up to 5').to.equal(true);
    expect(signal.wokeSince(before, undefined, 6), 'every type, read up to 6').to.equal(false);
  });

  it('are taken to concern it when more came than are kept', () => {
    const signal = new AppendSignal();
    const before = signal.notified;
    for (let n = 0; n < 100; n += 1) signal.notify(commit(n, n + 1, 'B'));
    expect(signal.wokeSince(before, ['A'])).to.equal(true);
    expect(signal.wokeSince(before + 50, ['A'])).to.equal(false);
  });
});

describe("the journal of this process's commits", () => {
  const journalOf = (...commits: ReturnType<typeof commit>[]) => {
    const journal = new CommitJournal();
    for (const c of commits) journal.record(c);
    return journal;
  };

  it('moves a subscriber past commits of other types that follow on from it, wake-ups missed or not', () => {
    const journal = journalOf(commit(0, 3, 'B'), commit(3, 4, 'C'), commit(4, 9, 'B', 'C'));
    expect(journal.skip(0, ['A'])).to.deep.equal({ position: 9, mustRead: false });
    expect(journal.skip(4, ['A'])).to.deep.equal({ position: 9, mustRead: false });
    expect(journal.skip(9, ['A'])).to.deep.equal({ position: 9, mustRead: false });
  });

  it('stops at a commit holding one of its types, and says to read', () => {
    const journal = journalOf(commit(0, 3, 'B'), commit(3, 5, 'B', 'A'), commit(5, 6, 'B'));
    expect(journal.skip(0, ['A'])).to.deep.equal({ position: 3, mustRead: true });
  });

  it("says to read where another process's events may lie between, or in the middle of a commit", () => {
    const gap = journalOf(commit(0, 3, 'B'), commit(5, 6, 'B'));
    expect(gap.skip(0, ['A'])).to.deep.equal({ position: 3, mustRead: true });
    expect(gap.skip(1, ['A'])).to.deep.equal({ position: 1, mustRead: true });
  });

  it('says to read to a subscriber of every type', () => {
    expect(journalOf(commit(0, 3, 'B')).skip(0, undefined)).to.deep.equal({ position: 0, mustRead: true });
  });

  it('keeps the latest commits only, and then says to read to one behind them', () => {
    const journal = new CommitJournal(4);
    for (let n = 0; n < 20; n += 1) journal.record(commit(n, n + 1, 'B'));
    expect(journal.skip(19, ['A'])).to.deep.equal({ position: 20, mustRead: false });
    expect(journal.skip(0, ['A'])).to.deep.equal({ position: 0, mustRead: true });
  });

  it('come early for what another process appended, through the WAL file, with the polling interval a minute', async function () {
    this.timeout(20_000);
    const { dir, remove } = tempDir();
    const file = join(dir, 'events.db');
    const store = openSqliteEventStore(file, { pollMs: 60_000 });
    // Another connection keeps a journal of its own, as another process does: its commits are foreign here.
    const other = openSqliteEventStore(file, { pollMs: 60_000 });
    const seen: string[] = [];
    // A consumer group: unlike a catch-up subscriber, it has no report of skipped positions to read after.
    await store.ensurePersistentSubscription('watching', {
      startFrom: 'start',
      maxRetryCount: 1,
      filter: { eventTypes: ['Wanted'] },
    });
    const subscription = store.subscribePersistent('watching', ({ event }) => {
      seen.push(event.type);
      return Promise.resolve({ kind: 'ack' });
    });
    // This process's own commits of other types, which change the same WAL file, come first.
    for (let n = 0; n < 20; n += 1)
      await store.appendToStream(`thing-t_watch_${n}`, [anEvent('Other', { n }, 't_watch')], 'any');
    await other.appendToStream('thing-t_watch_x', [anEvent('Wanted', {}, 't_watch')], 'no_stream');
    // Well inside the minute of polling: only the watcher can have woken it.
    await eventually(() => seen.length === 1, 10_000);
    await subscription.stop();
    await other.close();
    await store.close();
    remove();
  });
});

describe('the commits heard on PostgreSQL', () => {
  const heardOf = (...commits: ReturnType<typeof commit>[]) => {
    const heard = new HeardCommits();
    for (const c of commits) heard.record(c);
    return heard;
  };

  it('moves a subscriber past commits of other types heard in any order, up to the first gap', () => {
    const late = commit(0, 2, 'B');
    const heard = heardOf(commit(4, 5, 'C'), commit(2, 4, 'B'), late);
    expect(heard.skip(late, 0, ['A'])).to.deep.equal({ position: 5, mustRead: false });
    // Position 6 is another commit's, not heard of yet (still running, or taken by an append that failed):
    // no read, the wake-up that fills the gap or the polling interval comes for it.
    heard.record(commit(6, 7, 'B'));
    expect(heard.skip(commit(6, 7, 'B'), 5, ['A'])).to.deep.equal({ position: 5, mustRead: false });
    heard.record(commit(5, 6, 'C'));
    expect(heard.skip(commit(5, 6, 'C'), 5, ['A'])).to.deep.equal({ position: 7, mustRead: false });
  });

  it('says to read for a commit of one of its types not read yet, heard now or before', () => {
    const wanted = commit(3, 4, 'A');
    expect(heardOf(wanted).skip(wanted, 0, ['A'])).to.deep.equal({ position: 0, mustRead: true });
    expect(heardOf(wanted).skip(wanted, 4, ['A'])).to.deep.equal({ position: 4, mustRead: false });
    const heard = heardOf(commit(0, 3, 'B'), wanted, commit(4, 5, 'B'));
    expect(heard.skip(commit(4, 5, 'B'), 0, ['A'])).to.deep.equal({ position: 3, mustRead: true });
  });

  it('says to read after a wake-up that says nothing, after none (the polling interval), and to a subscriber of every type', () => {
    const heard = heardOf(commit(0, 3, 'B'));
    expect(heard.skip(somethingAppended, 0, ['A'])).to.deep.equal({ position: 0, mustRead: true });
    expect(heard.skip(null, 0, ['A'])).to.deep.equal({ position: 0, mustRead: true });
    expect(heard.skip(commit(0, 3, 'B'), 0, undefined)).to.deep.equal({ position: 0, mustRead: true });
  });

  it('keeps the latest commits only', () => {
    const heard = new HeardCommits(4);
    for (let n = 0; n < 20; n += 1) heard.record(commit(n, n + 1, 'B'));
    expect(heard.skip(commit(19, 20, 'B'), 16, ['A'])).to.deep.equal({ position: 20, mustRead: false });
    expect(heard.skip(commit(19, 20, 'B'), 0, ['A'])).to.deep.equal({ position: 0, mustRead: false });
  });
});

describe('the other processes listening on PostgreSQL', () => {
  it('are taken to listen while this process does not, and for a while after it starts to', () => {
    const others = new OtherListeners(3500);
    expect(others.any(0)).to.equal(true);
    others.listening(10, 1000);
    expect(others.any(4000)).to.equal(true);
    expect(others.any(4500)).to.equal(false);
  });

  it('are known by their announcements, a new one told as new once, and gone when not heard for a while', () => {
    const others = new OtherListeners(3500);
    others.listening(10, 0);
    expect(others.announced(10, 5000), 'its own announcement').to.equal(false);
    expect(others.any(5000)).to.equal(false);
    expect(others.announced(20, 5000)).to.equal(true);
    expect(others.any(5000)).to.equal(true);
    expect(others.announced(20, 6000)).to.equal(false);
    expect(others.any(9500)).to.equal(true);
    expect(others.any(9600)).to.equal(false);
    expect(others.announced(20, 9700), 'back after it was taken as gone').to.equal(true);
  });

  it('are taken to listen again while this process stopped listening', () => {
    const others = new OtherListeners(3500);
    others.listening(10, 0);
    expect(others.any(5000)).to.equal(false);
    others.stoppedListening();
    expect(others.any(5000)).to.equal(true);
  });
});
