import { parentPort } from 'node:worker_threads';
import { streamHeads, verifyChunk } from './verify-history-chunk.js';

/*
 * A worker thread of verifyHistoryFile: it verifies the chunks it is sent, and keeps the heads of one
 * shard of the streams, to which it links the chunks' links of that shard as they are sent, in file order.
 * Bytes come and go as transferred ArrayBuffers, not copies.
 */

export type WorkerRequest =
  | { id: number; kind: 'chunk'; buffer: ArrayBuffer; length: number; withHashes: boolean; shards: number }
  | { id: number; kind: 'links'; links: ArrayBuffer };

export interface LinksAnswer {
  intact: boolean;
  newStreams: number;
}

const heads = streamHeads();

parentPort?.on('message', (request: WorkerRequest) => {
  if (request.kind === 'links') {
    parentPort!.postMessage({
      id: request.id,
      answer: heads(Buffer.from(request.links)) satisfies LinksAnswer,
    });
    return;
  }
  const { buffer, length, withHashes, shards } = request;
  const answer = verifyChunk(Buffer.from(buffer, 0, length), withHashes, shards);
  parentPort!.postMessage({ id: request.id, answer }, answer.links);
});
