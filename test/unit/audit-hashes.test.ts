import { expect } from 'chai';
import { merkleBuilder, merkleLeaf, merkleRoot, type StreamHead } from '../../src/audit/merkle.js';
import { canonicalJson } from '../../src/eventstore/hash-chain.js';

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
