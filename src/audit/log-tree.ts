import { createHash } from 'node:crypto';

/**
 * The tenant's log tree, exactly as RFC 9162 §2.1 defines it (docs/auditors.md#6-digests-and-proofs): leaf i
 * is the i-th event of the tenant in commit order, its input the event's 32-byte hash. Hashes are Buffers
 * here, hex at the edges.
 */

const sha256 = (...parts: Uint8Array[]): Buffer => {
  const hash = createHash('sha256');
  for (const part of parts) hash.update(part);
  return hash.digest();
};

const leafPrefix = Uint8Array.of(0x00);
const nodePrefix = Uint8Array.of(0x01);

/** MTH({}) = SHA-256 of nothing. */
export const emptyTreeHash = sha256();

export const leafHash = (eventHash: Buffer): Buffer => sha256(leafPrefix, eventHash);
export const nodeHash = (left: Buffer, right: Buffer): Buffer => sha256(nodePrefix, left, right);

/** The largest power of two below n (n > 1): where RFC 9162 splits a tree of n leaves. */
export const splitOf = (n: number): number => {
  let k = 1;
  while (k * 2 < n) k *= 2;
  return k;
};

/** What a digest keeps of its tree to extend it later: the size, and the roots of its full subtrees. */
export interface LogFrontier {
  size: number;
  /** Largest first: one per bit set in `size`, from the highest. */
  nodes: Buffer[];
}

export const emptyFrontier: LogFrontier = { size: 0, nodes: [] };

/**
 * The tree grown one leaf at a time from a frontier, holding one node per bit of the size (a compact range):
 * a leaf merges with the full subtrees of equal height before it, as a binary counter carries.
 */
export const logBuilder = (start: LogFrontier) => {
  const nodes = [...start.nodes];
  let size = start.size;
  return {
    add: (eventHash: Buffer) => {
      let node = leafHash(eventHash);
      for (let carry = size; carry % 2 === 1; carry = Math.floor(carry / 2))
        node = nodeHash(nodes.pop()!, node);
      nodes.push(node);
      size += 1;
    },
    /** MTH of the leaves so far: the full subtrees folded from the right, as the RFC's split makes them. */
    root: (): Buffer =>
      nodes.reduceRight<Buffer | null>((right, left) => (right ? nodeHash(left, right) : left), null) ??
      emptyTreeHash,
    frontier: (): LogFrontier => ({ size, nodes: [...nodes] }),
  };
};

/** Leaf hashes of a tree, 32 bytes each, back to back: 32 MB for a million events. */
export interface LeafHashes {
  count: number;
  at: (index: number) => Buffer;
}

/** MTH(D[start:end]) (RFC 9162 §2.1.1). */
export const subtreeHash = (leaves: LeafHashes, start: number, end: number): Buffer => {
  const n = end - start;
  if (n === 0) return emptyTreeHash;
  if (n === 1) return leaves.at(start);
  const k = splitOf(n);
  return nodeHash(subtreeHash(leaves, start, start + k), subtreeHash(leaves, start + k, end));
};

/** PATH(m, D[start:end]) (RFC 9162 §2.1.3.1): the audit path of leaf m in the tree of those leaves. */
export const inclusionPath = (leaves: LeafHashes, m: number, start: number, end: number): Buffer[] => {
  const n = end - start;
  if (n <= 1) return [];
  const k = splitOf(n);
  return m < k
    ? [...inclusionPath(leaves, m, start, start + k), subtreeHash(leaves, start + k, end)]
    : [...inclusionPath(leaves, m - k, start + k, end), subtreeHash(leaves, start, start + k)];
};

/** SUBPROOF(m, D[start:end], b) (RFC 9162 §2.1.4.1); PROOF(m, D[n]) is consistencyPath(leaves, m, 0, n, true). */
export const consistencyPath = (
  leaves: LeafHashes,
  m: number,
  start: number,
  end: number,
  complete: boolean,
): Buffer[] => {
  const n = end - start;
  if (m === n) return complete ? [] : [subtreeHash(leaves, start, end)];
  const k = splitOf(n);
  return m <= k
    ? [...consistencyPath(leaves, m, start, start + k, complete), subtreeHash(leaves, start + k, end)]
    : [...consistencyPath(leaves, m - k, start + k, end, false), subtreeHash(leaves, start, start + k)];
};
