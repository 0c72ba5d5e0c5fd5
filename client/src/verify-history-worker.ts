import { parentPort } from 'node:worker_threads';
import { received, streamHeads, verifyChunk, type Transferred } from './verify-history-chunk.js';

/*
 * A worker thread of verifyHistoryFile: it verifies the chunks it is sent, and keeps the heads of one
 * shard of the streams, to which it links the chunks' links of that shard as they are sent, in file order.
 * Bytes come and go as transferred ArrayBuffers, not copies.
 */

export type WorkerRequest =
  | { id: number; kind: 'chunk'; chunk: Transferred; withHashes: boolean; shards: number }
  | { id: number; kind: 'links'; links: Transferred };

export interface LinksAnswer {
  intact: boolean;
  newStreams: number;
}

const heads = streamHeads();

parentPort?.on('message', (request: WorkerRequest) => {
  if (request.kind === 'links') {
    const answer: LinksAnswer = heads(received(request.links));
    parentPort!.postMessage({ id: request.id, answer });
    return;
  }
  const answer = verifyChunk(received(request.chunk), request.withHashes, request.shards);
  parentPort!.postMessage(
    { id: request.id, answer },
    answer.links.map(({ buffer }) => buffer),
  );
});
