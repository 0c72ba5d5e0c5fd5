import { createHash } from 'node:crypto';

const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');

export interface StreamHead {
  streamName: string;
  version: number;
  hash: string;
}

/**
 * A Merkle root over a tenant's stream heads, in stream-name order: one hash that commits to the last
 * event of every stream. Odd nodes are promoted unchanged; no streams give the hash of nothing.
 */
export const merkleRoot = (heads: readonly StreamHead[]): string => {
  let level = [...heads]
    .sort((a, b) => (a.streamName < b.streamName ? -1 : a.streamName > b.streamName ? 1 : 0))
    .map((head) => sha256(`${head.streamName}\n${head.version}\n${head.hash}`));
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
