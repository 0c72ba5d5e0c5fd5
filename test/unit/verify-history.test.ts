import { expect } from 'chai';
import { HistoryFormatError, verifyHistory, type ExportedEvent } from '../../client/src/index.js';
import { eventHash, genesisHash } from '../../src/eventstore/hash-chain.js';

const metadata = {
  tenantId: 't_1',
  actor: 'test',
  correlationId: 'c_1',
  causationId: null,
  occurredAt: '2026-05-01T00:00:00Z',
  schemaVersion: 1,
};

/** A stream of `count` exported events from `from` on, hashed by the service's own rule. */
const stream = (name: string, count: number, firstPosition: number, from = 0): ExportedEvent[] => {
  const events: ExportedEvent[] = [];
  let previousHash = genesisHash;
  for (let version = 0; version < from + count; version += 1) {
    const event = {
      id: `${name}-${version}`,
      type: 'T',
      streamName: name,
      streamVersion: version,
      data: { version },
      metadata,
    };
    const hash = eventHash(previousHash, event);
    if (version >= from)
      events.push({ ...event, position: firstPosition + version - from, hash, previousHash });
    previousHash = hash;
  }
  return events;
};

describe('verifyHistory (the client package)', () => {
  it('agrees with the service on every hash, and reports what it checked', async () => {
    const lines = stream('s-t_1_a', 3, 1).map((event) => JSON.stringify(event));
    expect(await verifyHistory(lines)).to.deep.equal({
      ok: true,
      events: 3,
      streams: 1,
      uncommitted: 0,
      range: { fromPosition: 1, toPosition: 3 },
    });
  });

  it('proves a filtered download from each stream’s first line on', async () => {
    const report = await verifyHistory(stream('s-t_1_a', 2, 10, 3));
    expect(report).to.deep.include({ ok: true, events: 2 });
    const forged = stream('s-t_1_a', 2, 10, 3);
    forged[1]!.previousHash = forged[0]!.previousHash;
    expect((await verifyHistory(forged)).broken).to.deep.include({
      streamVersion: 4,
      reason: 'the previous hash does not match the hash of version 3',
    });
  });

  it('takes the hash of an event with uncommitted secrets as given, and counts it', async () => {
    const [first, second] = stream('s-t_1_a', 2, 1);
    const redacted = { ...first!, data: { passwordHash: '[redacted]' }, uncommitted: ['passwordHash'] };
    expect(await verifyHistory([redacted, second!])).to.deep.include({ ok: true, uncommitted: 1 });
  });

  it('refuses a version 0 that does not start from the genesis hash', async () => {
    const [first] = stream('s-t_1_a', 1, 1);
    const report = await verifyHistory([{ ...first!, previousHash: 'f'.repeat(64) }]);
    expect(report.broken?.reason).to.equal('the previous hash of version 0 is not the genesis hash ""');
  });

  it('throws on a line that is not an exported event, naming the line', async () => {
    const [first] = stream('s-t_1_a', 1, 1);
    for (const bad of ['{"id": 1}', 'not json']) {
      const error = await verifyHistory([JSON.stringify(first), '', bad]).catch((caught: unknown) => caught);
      expect(error).to.be.instanceOf(HistoryFormatError);
      expect((error as Error).message).to.match(/^line 3: /);
    }
  });
});
