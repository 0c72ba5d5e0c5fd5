import { join } from 'node:path';
import { expect } from 'chai';
import Database from 'better-sqlite3';
import { verifyWithin } from '../../src/audit/verification.api.js';
import { UnavailableError } from '../../src/core/errors.js';
import type { EventStore } from '../../src/eventstore/port.js';
import { openSqliteEventStore } from '../../src/eventstore/sqlite.js';
import { tempDir } from '../support/adapters.js';
import { anObservationRecorded, uniqueTenant } from '../support/events.js';

/** The store as it is, but every page of readTenantByStream takes `ms` longer: a long history, in little. */
const slowPages = (store: EventStore, ms: number): EventStore => ({
  ...store,
  readTenantByStream: async function* (tenantId, options) {
    for await (const page of store.readTenantByStream(tenantId, options)) {
      await new Promise((resolve) => setTimeout(resolve, ms));
      yield page;
    }
  },
});

describe('GET …/audit/verification keeps to its time budget', function () {
  this.timeout(30_000);
  const dir = tempDir();
  const file = join(dir.dir, 'events.db');
  const tenantId = uniqueTenant();
  let store: EventStore;
  let forged: string;

  before(async () => {
    store = openSqliteEventStore(file);
    // 4,000 events: four pages of readTenantByStream.
    const appended = await Promise.all(
      Array.from({ length: 4000 }, async () => {
        const { stream, event } = anObservationRecorded(tenantId);
        await store.appendToStream(stream, [event], 'no_stream');
        return stream;
      }),
    );
    forged = appended[2000]!;
  });
  after(async () => {
    await store.close();
    dir.remove();
  });

  it('answers 503 when a broken history takes longer than the budget, its second pass included', async () => {
    // Four pages of 250 ms: one pass fits in the 1.6 s budget, as the intact history shows; two do not.
    const slow = slowPages(store, 250);
    const intact = await verifyWithin(slow, tenantId, 1600);
    expect(intact.broken).to.equal(null);
    expect(intact.events).to.equal(4000);

    const db = new Database(file);
    db.prepare(
      `UPDATE events SET data = json_set(data, '$.notes', 'forged') WHERE stream_name = ? AND stream_version = 0`,
    ).run(forged);
    db.close();
    expect((await verifyWithin(store, tenantId, 60_000)).broken).to.deep.include({ streamName: forged });

    const started = Date.now();
    const outcome = await verifyWithin(slow, tenantId, 1600).then(
      (report) => report,
      (error: unknown) => error,
    );
    expect(outcome, JSON.stringify(outcome)).to.be.instanceOf(UnavailableError);
    expect((outcome as UnavailableError).message).to.match(/obs audit verify --tenant/);
    // Stopped at the first page past the budget, not after a whole second pass.
    expect(Date.now() - started).to.be.below(1600 + 2 * 250 + 500);
  });
});
