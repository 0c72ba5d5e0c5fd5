import { createServer, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/** One infer request the server got. */
export interface InferCall {
  model: string;
  path: string;
  contentType: string | undefined;
  body: any;
  at: number;
}

/** What to answer: a status and JSON body (or raw text), optionally after a delay; or never answer. */
export type InferAnswer = { status?: number; body?: unknown; rawBody?: string; delayMs?: number } | 'hang';

/** A valid Open Inference Protocol reply carrying these detections and summary. */
export const inferReply = (detections: unknown, summary?: unknown, model = 'model') => ({
  model_name: model,
  outputs: [
    { name: 'detections', datatype: 'BYTES', shape: [1], data: [JSON.stringify(detections)] },
    ...(summary === undefined
      ? []
      : [{ name: 'summary', datatype: 'BYTES', shape: [1], data: [JSON.stringify(summary)] }]),
  ],
});

/**
 * A small inference server on 127.0.0.1 speaking the KServe v2 REST route
 * `POST /v2/models/{name}/infer`: it records every request and answers what `answer` says.
 * Other paths get 404, as a real server's would.
 */
export const startInferenceServer = async (
  answer: (call: InferCall, n: number) => InferAnswer | Promise<InferAnswer>,
) => {
  const calls: InferCall[] = [];
  const hanging = new Set<ServerResponse>();
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const match = /^\/v2\/models\/([^/]+)\/infer$/.exec(req.url ?? '');
      if (req.method !== 'POST' || !match) {
        res.writeHead(404, { 'content-type': 'application/json' }).end('{"error":"no such route"}');
        return;
      }
      let body: unknown;
      try {
        body = JSON.parse(Buffer.concat(chunks).toString('utf8'));
      } catch {
        body = undefined;
      }
      const call: InferCall = {
        model: decodeURIComponent(match[1]!),
        path: req.url!,
        contentType: req.headers['content-type'],
        body,
        at: Date.now(),
      };
      calls.push(call);
      void Promise.resolve(answer(call, calls.length)).then((wanted) => {
        if (wanted === 'hang') {
          hanging.add(res);
          res.on('close', () => hanging.delete(res));
          return;
        }
        const send = () => {
          if (res.destroyed) return;
          const text = wanted.rawBody ?? JSON.stringify(wanted.body ?? {});
          res.writeHead(wanted.status ?? 200, { 'content-type': 'application/json' }).end(text);
        };
        if (wanted.delayMs) setTimeout(send, wanted.delayMs);
        else send();
      });
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    port,
    calls,
    close: async () => {
      for (const res of hanging) res.destroy();
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    },
  };
};

export type InferenceServer = Awaited<ReturnType<typeof startInferenceServer>>;
