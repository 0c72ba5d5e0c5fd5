import { createHash } from 'node:crypto';

const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');

export interface StreamHead {
  streamName: string;
  version: number;
  hash: string;
}

/** The leaf of one stream head. */
export const merkleLeaf = (head: StreamHead): string =>
  sha256(`${head.streamName}\n${head.version}\n${head.hash}`);

const byStreamName = (a: StreamHead, b: StreamHead) =>
  a.streamName < b.streamName ? -1 : a.streamName > b.streamName ? 1 : 0;

/**
 * A Merkle root over a tenant's stream heads, in stream-name order: one hash that commits to the last
 * event of every stream. Odd nodes are promoted unchanged; no streams give the hash of nothing.
 */
export const merkleRoot = (heads: readonly StreamHead[]): string => {
  let level = [...heads].sort(byStreamName).map(merkleLeaf);
  if (level.length === 0) return sha256('');
  while (level.length > 1) {
    const next: string[] = [];
    for (let index = 0; index < level.length; index += 2) {
      const right = level[index + 1];
      next.push(right === undefined ? level[index]! : sha256(level[index]! + right));
    }
    level = next;
  }
  return level[0]!;
};

/**
 * The same root, built from leaves given one at a time in stream-name order, holding one node per level
 * (about 20 for a million streams) instead of every leaf. The nodes on the stack are the roots of full
 * subtrees, largest first; merkleRoot's promotion of odd nodes amounts to folding them from the right.
 */
export const merkleBuilder = () => {
  const stack: { height: number; hash: string }[] = [];
  return {
    add: (leaf: string) => {
      let node = { height: 0, hash: leaf };
      for (let top = stack.at(-1); top?.height === node.height; top = stack.at(-1)) {
        stack.pop();
        node = { height: node.height + 1, hash: sha256(top.hash + node.hash) };
      }
      stack.push(node);
    },
    root: (): string => {
      if (stack.length === 0) return sha256('');
      let root = stack.at(-1)!.hash;
      for (let index = stack.length - 2; index >= 0; index -= 1) root = sha256(stack[index]!.hash + root);
      return root;
    },
  };
};
