import { expect } from 'chai';
import { merkleBuilder, merkleLeaf, merkleRoot, type StreamHead } from '../../src/audit/merkle.js';
import { createHash } from 'node:crypto';
import type { EventMetadata } from '../../src/core/events.js';
import {
  canonicalJson,
  chainEvent,
  commitment,
  committedForm,
  eventHash,
  withSalts,
  type ChainedContent,
} from '../../src/eventstore/hash-chain.js';

/** The canonical JSON every stored hash was taken over, as first written: its output must never change. */
const canonicalJsonAsFirstWritten = (value: unknown): string => {
  if (Array.isArray(value)) return `[${value.map(canonicalJsonAsFirstWritten).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>)
      .filter(([, item]) => item !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([key, item]) => `${JSON.stringify(key)}:${canonicalJsonAsFirstWritten(item)}`).join(',')}}`;
  }
  return JSON.stringify(value);
};

describe('the hashes behind audit verify', () => {
  describe('canonical JSON', () => {
    it('writes what it always wrote, for every shape of value', () => {
      const values: unknown[] = [
        null,
        0,
        -1.5e-7,
        'text with "quotes", \\ and ünïcödé 🦊',
        true,
        [],
        {},
        [1, undefined, null, [2, { b: 1, a: [] }]],
        { z: 1, a: { y: [3, { d: undefined, c: 'x' }], b: null }, ä: 2, A: 3, '10': 4, '9': 5, _: 6 },
        { observationId: 'o_1', position: { lon: -1.5, lat: 51, accuracyM: 5 }, attributes: {}, notes: null },
        { nested: { deeper: { deepest: [{ k: 'v' }, 'w', 7] } }, dropped: undefined },
      ];
      for (const value of values) expect(canonicalJson(value)).to.equal(canonicalJsonAsFirstWritten(value));
    });
  });

  describe('an event hash', () => {
    const hashAsFirstWritten = (previousHash: string, event: ChainedContent) =>
      createHash('sha256')
        .update(
          canonicalJsonAsFirstWritten({
            previousHash,
            streamName: event.streamName,
            streamVersion: event.streamVersion,
            id: event.id,
            type: event.type,
            data: event.data,
            metadata: event.metadata,
          }),
        )
        .digest('hex');
    const metadata = { tenantId: 't_1', actor: 'test', occurredAt: '2026-05-01T00:00:00Z' } as EventMetadata;
    const contents: ChainedContent[] = [
      {
        streamName: 's-t_1_a',
        streamVersion: 0,
        id: 'e1',
        type: 'A',
        data: { b: 1, a: { d: [1, { f: 2, e: 3 }] } },
        metadata,
      },
      {
        streamName: 's-t_1_a',
        streamVersion: 1,
        id: 'e2',
        type: 'B',
        data: { a: 1, b: [null, 'x'] },
        metadata,
      },
      {
        streamName: 's-t_1_a',
        streamVersion: 2,
        id: 'e3',
        type: 'C',
        data: { at: new Date(0), list: [1, undefined] },
        metadata,
      },
      {
        streamName: 's-t_1_a',
        streamVersion: 3,
        id: 'e4',
        type: 'D',
        data: { gone: undefined, fn: () => 1 },
        metadata,
      },
      { streamName: 's-t_1_a', streamVersion: 4, id: 'e5', type: 'E', data: undefined, metadata },
      { streamName: 's-t_1_a', streamVersion: 5, id: 'e6', type: 'F', data: [{ '10': 1, '9': 2 }], metadata },
    ];

    it('is what it always was, whatever the content', () => {
      for (const content of contents) {
        expect(eventHash('prev', content), content.id).to.equal(hashAsFirstWritten('prev', content));
        expect(chainEvent('prev', content).hash, content.id).to.equal(hashAsFirstWritten('prev', content));
      }
    });

    it('is stored with data and metadata in canonical form when that only reorders keys, and as written otherwise', () => {
      const [reordered, sorted, withDate] = contents.map((content) => chainEvent('', content));
      expect(reordered!.data).to.equal('{"a":{"d":[1,{"e":3,"f":2}]},"b":1}');
      expect(reordered!.metadata).to.equal(canonicalJson(metadata));
      expect(sorted!.data).to.equal('{"a":1,"b":[null,"x"]}');
      expect(withDate!.data).to.equal(JSON.stringify(contents[2]!.data));
      const readBack = {
        ...contents[0]!,
        data: JSON.parse(reordered!.data),
        metadata: JSON.parse(reordered!.metadata),
      };
      expect(eventHash('', readBack)).to.equal(reordered!.hash);
    });

    describe('of an event with secret fields', () => {
      const created: ChainedContent = {
        streamName: 'user-t_1_u_1',
        streamVersion: 0,
        id: 'e7',
        type: 'UserCreated',
        data: { userId: 'u_1', passwordHash: 'scrypt$abc', scopes: ['cv:read'] },
        metadata,
      };
      const stored = chainEvent('', created);
      const readBack = { ...created, data: JSON.parse(stored.data), metadata: JSON.parse(stored.metadata) };
      const salt = (readBack.metadata as EventMetadata).salts!.passwordHash!;

      it('stores a fresh 16-byte salt for each, and the value itself', () => {
        expect(salt).to.match(/^[A-Za-z0-9_-]{22}$/);
        expect(readBack.data).to.deep.equal(created.data);
        expect(chainEvent('', created).metadata).not.to.equal(stored.metadata);
      });

      it('covers the committed form: each such field as the digest of its salt and value, the metadata without salts', () => {
        const committed = committedForm(readBack);
        expect(committed.data).to.deep.equal({
          userId: 'u_1',
          passwordHash: {
            commitment: createHash('sha256')
              .update(`{"salt":${JSON.stringify(salt)},"value":"scrypt$abc"}`)
              .digest('hex'),
          },
          scopes: ['cv:read'],
        });
        expect(committed.data).to.deep.equal({
          ...created.data!,
          passwordHash: { commitment: commitment(salt, 'scrypt$abc') },
        });
        expect(committed.metadata).to.deep.equal(metadata);
        expect(stored.hash).to.equal(hashAsFirstWritten('', committed));
        expect(eventHash('', readBack)).to.equal(stored.hash);
        expect(
          eventHash('', { ...readBack, data: { ...readBack.data, passwordHash: 'other' } }),
        ).not.to.equal(stored.hash);
      });

      it('keeps the salts an event already has, and adds none where there is no secret', () => {
        expect(withSalts(readBack)).to.equal(readBack);
        expect(withSalts(contents[0]!)).to.equal(contents[0]);
        expect(committedForm(contents[0]!)).to.equal(contents[0]);
      });
    });
  });

  describe('a Merkle root built leaf by leaf', () => {
    const head = (n: number): StreamHead => ({
      streamName: `observation-t_x_${String(n).padStart(4, '0')}`,
      version: n % 7,
      hash: `${n}`.repeat(3),
    });

    it('equals the root over all the heads at once, for any number of streams', () => {
      for (let count = 0; count <= 70; count += 1) {
        const heads = Array.from({ length: count }, (_, n) => head(n));
        const builder = merkleBuilder();
        for (const one of heads) builder.add(merkleLeaf(one));
        expect(builder.root(), `${count} streams`).to.equal(merkleRoot(heads.reverse()));
      }
    });

    it('differs when one head differs', () => {
      const heads = Array.from({ length: 5 }, (_, n) => head(n));
      const builder = merkleBuilder();
      for (const one of heads)
        builder.add(merkleLeaf({ ...one, version: one.version + (one === heads[3] ? 1 : 0) }));
      expect(builder.root()).not.to.equal(merkleRoot(heads));
    });
  });
});
