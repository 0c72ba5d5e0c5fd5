import { expect } from 'chai';
import { join } from 'node:path';
import { handleCommand, handleCreate, type CommandContext } from '../../src/core/command-handler.js';
import type { Decider } from '../../src/core/decider.js';
import { PreconditionFailedError, VersionConflictError } from '../../src/core/errors.js';
import type { EventStore } from '../../src/eventstore/port.js';
import { openSqliteEventStore } from '../../src/eventstore/sqlite.js';
import { withUpcasting } from '../../src/eventstore/upcasting.js';
import { eventSchemas } from '../../src/domains.js';
import { tempDir } from '../support/adapters.js';
import { anEvent } from '../support/events.js';

type Counted = { type: 'Counted'; data: { n: number } };

const context: CommandContext = {
  tenantId: 't_test',
  actor: 'test',
  correlationId: 'corr',
  causationId: 'cause',
  now: new Date('2026-01-01T00:00:00Z'),
  newEventId: () => crypto.randomUUID(),
};

/** A counter whose decide lets the test slip a competing write in between the read and the append. */
const counter = (beforeDeciding: () => void = () => undefined): Decider<number, 'count', Counted> => ({
  aggregate: 'counter',
  initialState: () => 0,
  decide: (_command, state) => {
    beforeDeciding();
    return [{ type: 'Counted', data: { n: state + 1 } }];
  },
  evolve: (_state, event) => event.data.n,
});

describe('the command handler', () => {
  let store: EventStore;
  let remove: () => void;
  const stream = 'counter-t_test_c_1';

  beforeEach(() => {
    const dir = tempDir();
    remove = dir.remove;
    // As openStores opens it: the schema version is the store's to stamp.
    store = withUpcasting(openSqliteEventStore(join(dir.dir, 'events.db')), eventSchemas);
  });
  afterEach(async () => {
    await store.close();
    remove();
  });

  it('appends what the decider decides, with the context as metadata, and returns the new state', async () => {
    const first = await handleCommand(store, counter(), stream, 'count', context);
    const second = await handleCommand(store, counter(), stream, 'count', context);
    expect([first.state, first.version, second.state, second.version]).to.deep.equal([1, 0, 2, 1]);
    const [event] = await store.readStream(stream);
    expect(event?.metadata).to.deep.equal({
      tenantId: 't_test',
      actor: 'test',
      correlationId: 'corr',
      causationId: 'cause',
      occurredAt: '2026-01-01T00:00:00.000Z',
      schemaVersion: 1,
    });
  });

  it('refuses with a version conflict (409) when another write lands between its read and its append', async () => {
    await handleCommand(store, counter(), stream, 'count', context);
    const sneakIn = () => void store.appendToStream(stream, [anEvent('Counted', { n: 99 }, 't_test')], 0);
    const error = await handleCommand(store, counter(sneakIn), stream, 'count', context).catch(
      (e: unknown) => e,
    );
    expect(error).to.be.instanceOf(VersionConflictError);
    expect((await store.readStream(stream)).map((e) => e.data)).to.deep.equal([{ n: 1 }, { n: 99 }]);
  });

  it('answers 412 instead when the client sent If-Match', async () => {
    await handleCommand(store, counter(), stream, 'count', context);
    const sneakIn = () => void store.appendToStream(stream, [anEvent('Counted', { n: 99 }, 't_test')], 0);
    const raced = await handleCommand(store, counter(sneakIn), stream, 'count', context, 0).catch(
      (e: unknown) => e,
    );
    expect(raced).to.be.instanceOf(PreconditionFailedError);
    const stale = await handleCommand(store, counter(), stream, 'count', context, 0).catch((e: unknown) => e);
    expect(stale).to.be.instanceOf(PreconditionFailedError);
  });

  it('creates without reading the stream, and decides on what it holds when the id exists after all', async () => {
    // A creation refused by the decider once its stream exists, like every create of the service.
    const once: Decider<number, 'create', Counted> = {
      ...counter(),
      decide: (_command, state) => {
        if (state > 0) throw new PreconditionFailedError('already created');
        return [{ type: 'Counted', data: { n: 1 } }];
      },
    };
    let reads = 0;
    const counting: EventStore = Object.create(store, {
      readStream: {
        value: (...args: Parameters<EventStore['readStream']>) => ((reads += 1), store.readStream(...args)),
      },
    });
    const created = await handleCreate(counting, once, stream, 'create', context);
    expect([created.state, created.version, reads]).to.deep.equal([1, 0, 0]);
    // The same id again: the append's conflict sends it the full way, and the decider's answer comes back.
    const again = await handleCreate(counting, once, stream, 'create', context).catch(
      (error: unknown) => error,
    );
    expect(again).to.be.instanceOf(PreconditionFailedError);
    expect(reads).to.equal(1);
    expect(await store.readStream(stream)).to.have.length(1);
  });
});
