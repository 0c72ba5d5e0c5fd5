import { createServer, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * A test server speaking the Open Inference Protocol's REST API as KServe v2 and Triton publish it:
 *
 *   GET  /v2/health/ready, /v2/health/live
 *   GET  /v2/models/{name}[/versions/{version}]          metadata {name, versions, platform, inputs, outputs}
 *   GET  /v2/models/{name}[/versions/{version}]/ready
 *   POST /v2/models/{name}[/versions/{version}]/infer
 *
 * Each served model answers its infer requests with what its `infer` computes from the request.
 */

export interface TensorMetadata {
  name: string;
  datatype: string;
  shape: number[];
}

/** What to answer: a JSON body, raw text, a status; or never answer. */
export type TensorAnswer = { status?: number; body?: unknown; rawBody?: string | Buffer } | 'hang';

export interface ServedModel {
  name: string;
  version?: string;
  inputs: TensorMetadata[];
  outputs: TensorMetadata[];
  ready?: boolean;
  infer(request: InferRequest): TensorAnswer;
}

export interface InferRequest {
  inputs: { name: string; shape: number[]; datatype: string; data: number[] }[];
}

export interface TensorCall {
  method: string;
  path: string;
  model: string;
  version: string | undefined;
  body: InferRequest | undefined;
}

const route = /^\/v2\/models\/([^/]+)(?:\/versions\/([^/]+))?(\/ready|\/infer)?$/;

export const startOpenInferenceServer = async (models: readonly ServedModel[]) => {
  const byName = new Map(models.map((model) => [model.name, model]));
  const calls: TensorCall[] = [];
  const hanging = new Set<ServerResponse>();
  const json = (res: ServerResponse, status: number, body: unknown) =>
    res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));

  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const path = req.url ?? '';
      if (req.method === 'GET' && (path === '/v2/health/ready' || path === '/v2/health/live')) {
        res.writeHead(200).end();
        return;
      }
      const match = route.exec(path);
      if (!match) {
        json(res, 404, { error: 'Not Found' });
        return;
      }
      const name = decodeURIComponent(match[1]!);
      const version = match[2] === undefined ? undefined : decodeURIComponent(match[2]);
      const action = match[3];
      const model = byName.get(name);
      let body: InferRequest | undefined;
      if (req.method === 'POST') {
        try {
          body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as InferRequest;
        } catch {
          body = undefined;
        }
      }
      calls.push({ method: req.method ?? '', path, model: name, version, body });
      if (!model || (version !== undefined && model.version !== version)) {
        // Triton's words for a model it does not serve.
        json(res, 404, { error: `Request for unknown model: '${name}' is not found` });
        return;
      }
      if (req.method === 'GET' && action === '/ready') {
        if (model.ready === false) json(res, 400, { error: `Model '${name}' is not ready` });
        else res.writeHead(200).end();
        return;
      }
      if (req.method === 'GET' && action === undefined) {
        json(res, 200, {
          name,
          versions: [model.version ?? '1'],
          platform: 'onnxruntime_onnx',
          inputs: model.inputs,
          outputs: model.outputs,
        });
        return;
      }
      if (req.method !== 'POST' || action !== '/infer') {
        json(res, 405, { error: 'Method Not Allowed' });
        return;
      }
      if (!body || !Array.isArray(body.inputs)) {
        json(res, 400, { error: 'failed to parse the request JSON buffer' });
        return;
      }
      const answer = model.infer(body);
      if (answer === 'hang') {
        hanging.add(res);
        res.on('close', () => hanging.delete(res));
        return;
      }
      const text = answer.rawBody ?? JSON.stringify(answer.body ?? {});
      res.writeHead(answer.status ?? 200, { 'content-type': 'application/json' }).end(text);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    calls,
    close: async () => {
      for (const res of hanging) res.destroy();
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    },
  };
};

export type OpenInferenceServer = Awaited<ReturnType<typeof startOpenInferenceServer>>;
