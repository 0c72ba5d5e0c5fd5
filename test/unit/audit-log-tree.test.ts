import { expect } from 'chai';
import { createHash } from 'node:crypto';
import { leafHashOf, logRoot, verifyConsistency, verifyInclusion } from '../../client/src/audit-proofs.js';
import {
  consistencyPath,
  emptyFrontier,
  inclusionPath,
  leafHash,
  logBuilder,
  subtreeHash,
  type LeafHashes,
} from '../../src/audit/log-tree.js';

/*
 * RFC 9162 §2.1, written again as the RFC states it, on arrays, with no incremental builder: the service's
 * tree and the client's verifier must agree with it, and with Certificate Transparency's known answers.
 */
const sha = (...parts: Buffer[]) => createHash('sha256').update(Buffer.concat(parts)).digest();
const largestPowerOfTwoBelow = (n: number) => 2 ** Math.ceil(Math.log2(n) - 1);

const mth = (d: Buffer[]): Buffer => {
  if (d.length === 0) return sha();
  if (d.length === 1) return sha(Buffer.of(0), d[0]!);
  const k = largestPowerOfTwoBelow(d.length);
  return sha(Buffer.of(1), mth(d.slice(0, k)), mth(d.slice(k)));
};

const naivePath = (m: number, d: Buffer[]): Buffer[] => {
  if (d.length <= 1) return [];
  const k = largestPowerOfTwoBelow(d.length);
  return m < k
    ? [...naivePath(m, d.slice(0, k)), mth(d.slice(k))]
    : [...naivePath(m - k, d.slice(k)), mth(d.slice(0, k))];
};

const naiveSubproof = (m: number, d: Buffer[], b: boolean): Buffer[] => {
  if (m === d.length) return b ? [] : [mth(d)];
  const k = largestPowerOfTwoBelow(d.length);
  return m <= k
    ? [...naiveSubproof(m, d.slice(0, k), b), mth(d.slice(k))]
    : [...naiveSubproof(m - k, d.slice(k), false), mth(d.slice(0, k))];
};

const hex = (nodes: Buffer[]) => nodes.map((node) => node.toString('hex'));

/** The inputs of CT's reference tests (certificate-transparency, merkle_tree_test), and their roots. */
const ctInputs = [
  '',
  '00',
  '10',
  '2021',
  '3031',
  '40414243',
  '5051525354555657',
  '606162636465666768696a6b6c6d6e6f',
].map((input) => Buffer.from(input, 'hex'));
const ctRoots = [
  '6e340b9cffb37a989ca544e6bb780a2c78901d3fb33738768511a30617afa01d',
  'fac54203e7cc696cf0dfcb42c92a1d9dbaf70ad9e621f4bd8d98662f00e3c125',
  'aeb6bcfe274b70a14fb067a5e5578264db0fa9b51af5e0ba159158f329e06e77',
  'd37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7',
  '4e3bbb1f7b478dcfe71fb631631519a3bca12c9aefca1612bfce4c13a86264d4',
  '76e67dadbcdf1e10e1b74ddc608abd2f98dfb16fbce75277b5232a127f2087ef',
  'ddb89be403809e325750d3d263cd78929c2942b7942a34b77e122c9594a74c8c',
  '5dc9da79a70659a9ad559cb701ded9a2ab9d823aad2f4960cfe370eff4604328',
];

const eventHashes = (n: number) =>
  Array.from({ length: n }, (_, index) => createHash('sha256').update(`event ${index}`).digest());

const leavesOf = (inputs: Buffer[]): LeafHashes => {
  const hashes = inputs.map(leafHash);
  return { count: hashes.length, at: (index) => hashes[index]! };
};

describe('the log tree of RFC 9162', () => {
  it('gives the roots of Certificate Transparency’s reference tests', () => {
    for (let size = 1; size <= ctInputs.length; size += 1) {
      const tree = logBuilder(emptyFrontier);
      ctInputs.slice(0, size).forEach((input) => tree.add(input));
      expect(tree.root().toString('hex'), `size ${size}`).to.equal(ctRoots[size - 1]);
      expect(mth(ctInputs.slice(0, size)).toString('hex'), `naive, size ${size}`).to.equal(ctRoots[size - 1]);
    }
    expect(logBuilder(emptyFrontier).root().toString('hex')).to.equal(
      'e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855',
    );
  });

  it('builds, extends from a frontier, and streams in the client, the root the definition gives', () => {
    const inputs = eventHashes(70);
    for (let size = 0; size <= inputs.length; size += 1) {
      const expected = mth(inputs.slice(0, size)).toString('hex');
      const half = Math.floor(size / 2);
      const first = logBuilder(emptyFrontier);
      inputs.slice(0, half).forEach((input) => first.add(input));
      const second = logBuilder(first.frontier());
      inputs.slice(half, size).forEach((input) => second.add(input));
      expect(second.root().toString('hex'), `size ${size}`).to.equal(expected);
      expect(second.frontier().nodes).to.have.length(size.toString(2).replace(/0/g, '').length);
      const client = logRoot();
      inputs.slice(0, size).forEach((input) => client.add(input.toString('hex')));
      expect([client.root(), client.size]).to.deep.equal([expected, size]);
      expect(subtreeHash(leavesOf(inputs), 0, size).toString('hex')).to.equal(expected);
    }
  });

  it('gives the inclusion paths of the definition, and the client accepts each', () => {
    const inputs = eventHashes(37);
    const leaves = leavesOf(inputs);
    for (let size = 1; size <= inputs.length; size += 1) {
      const root = mth(inputs.slice(0, size)).toString('hex');
      for (let index = 0; index < size; index += 1) {
        const path = hex(inclusionPath(leaves, index, 0, size));
        expect(path).to.deep.equal(hex(naivePath(index, inputs.slice(0, size))));
        const eventHash = inputs[index]!.toString('hex');
        expect(verifyInclusion({ eventHash }, index, size, path, root), `${index} in ${size}`).to.equal(true);
        expect(verifyInclusion({ leafHash: leafHashOf(eventHash) }, index, size, path, root)).to.equal(true);
      }
    }
  });

  it('gives the consistency paths of the definition, and the client accepts each', () => {
    const inputs = eventHashes(37);
    const leaves = leavesOf(inputs);
    const roots = Array.from({ length: inputs.length + 1 }, (_, size) =>
      mth(inputs.slice(0, size)).toString('hex'),
    );
    for (let to = 1; to <= inputs.length; to += 1) {
      for (let from = 1; from <= to; from += 1) {
        const path = hex(consistencyPath(leaves, from, 0, to, true));
        expect(path).to.deep.equal(hex(naiveSubproof(from, inputs.slice(0, to), true)));
        expect(verifyConsistency(from, to, roots[from]!, roots[to]!, path), `${from} → ${to}`).to.equal(true);
      }
    }
  });

  describe('the client refuses a tampered proof', () => {
    const inputs = eventHashes(13);
    const leaves = leavesOf(inputs);
    const root = (size: number) => mth(inputs.slice(0, size)).toString('hex');
    const flip = (hash: string) => `${hash.slice(0, -1)}${hash.endsWith('0') ? '1' : '0'}`;
    const eventHash = inputs[5]!.toString('hex');
    const path = hex(inclusionPath(leaves, 5, 0, 13));

    it('of inclusion: another root, path, index, size or leaf', () => {
      expect(verifyInclusion({ eventHash }, 5, 13, path, root(13))).to.equal(true);
      expect(verifyInclusion({ eventHash }, 5, 13, path, flip(root(13)))).to.equal(false);
      expect(verifyInclusion({ eventHash }, 5, 13, path, root(12))).to.equal(false);
      path.forEach((_, at) => {
        const tampered = path.map((node, index) => (index === at ? flip(node) : node));
        expect(verifyInclusion({ eventHash }, 5, 13, tampered, root(13)), `node ${at}`).to.equal(false);
      });
      expect(verifyInclusion({ eventHash }, 5, 13, path.slice(1), root(13))).to.equal(false);
      expect(verifyInclusion({ eventHash }, 5, 13, [...path, path[0]!], root(13))).to.equal(false);
      expect(verifyInclusion({ eventHash }, 4, 13, path, root(13))).to.equal(false);
      expect(verifyInclusion({ eventHash }, 5, 8, path, root(13))).to.equal(false);
      expect(verifyInclusion({ eventHash }, 5, 12, path, root(12))).to.equal(false);
      expect(verifyInclusion({ eventHash }, 13, 13, path, root(13))).to.equal(false);
      expect(verifyInclusion({ eventHash: flip(eventHash) }, 5, 13, path, root(13))).to.equal(false);
      // The leaf hash given as the event's hash is another leaf: the 0x00 prefix keeps them apart.
      expect(verifyInclusion({ eventHash: leafHashOf(eventHash) }, 5, 13, path, root(13))).to.equal(false);
      expect(verifyInclusion({ eventHash }, 5, 13, ['zz'], root(13))).to.equal(false);
    });

    it('of consistency: another root, path or size', () => {
      const proof = hex(consistencyPath(leaves, 6, 0, 13, true));
      expect(verifyConsistency(6, 13, root(6), root(13), proof)).to.equal(true);
      expect(verifyConsistency(6, 13, flip(root(6)), root(13), proof)).to.equal(false);
      expect(verifyConsistency(6, 13, root(6), flip(root(13)), proof)).to.equal(false);
      proof.forEach((_, at) => {
        const tampered = proof.map((node, index) => (index === at ? flip(node) : node));
        expect(verifyConsistency(6, 13, root(6), root(13), tampered), `node ${at}`).to.equal(false);
      });
      expect(verifyConsistency(7, 13, root(7), root(13), proof)).to.equal(false);
      expect(verifyConsistency(6, 12, root(6), root(12), proof)).to.equal(false);
      expect(verifyConsistency(6, 13, root(6), root(13), [])).to.equal(false);
      expect(verifyConsistency(13, 6, root(13), root(6), proof)).to.equal(false);
      expect(verifyConsistency(6, 6, root(6), root(6), [])).to.equal(true);
      expect(verifyConsistency(6, 6, root(6), root(7), [])).to.equal(false);
      // A rewritten history: the tree of 13 whose first 6 leaves differ is not an extension.
      const rewritten = [...eventHashes(6).map((hash) => sha(hash)), ...inputs.slice(6)];
      const otherProof = hex(consistencyPath(leavesOf(rewritten), 6, 0, 13, true));
      expect(verifyConsistency(6, 13, root(6), mth(rewritten).toString('hex'), otherProof)).to.equal(false);
    });
  });
});
