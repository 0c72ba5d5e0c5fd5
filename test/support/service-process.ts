import { request as httpRequest, type Agent, type IncomingHttpHeaders } from 'node:http';
import { connect } from 'node:net';
import { eventually } from './events.js';
import { freePort, startTs } from './process.js';
import { request } from './server.js';

export const platformKey = 'e2e-platform-key-0123456789';

/** The service as `npm start` runs it (`node --import tsx src/main.ts`), on loopback, ready for traffic. */
export const startServiceProcess = async (dataDir: string, env: Record<string, string> = {}) => {
  const port = await freePort();
  const service = startTs('src/main.ts', [], {
    DATA_DIR: dataDir,
    PORT: String(port),
    HOST: '127.0.0.1',
    LOG_LEVEL: 'info',
    PLATFORM_ADMIN_KEY: platformKey,
    ...env,
  });
  const url = `http://127.0.0.1:${port}`;
  const output = () => service.output.stdout.slice(-2000) + service.output.stderr.slice(-2000);
  // A process that exits at start (exit 2 for a setting, 3 for a port) fails at once, saying why.
  const exitedEarly = service.exited.then((code) => {
    throw new Error(`the service exited with code ${code} before it was ready:\n${output()}`);
  });
  const ready = eventually(
    async () => (await fetch(`${url}/health/ready`).catch(() => null))?.ok === true,
    20_000,
  );
  await Promise.race([ready, exitedEarly]).catch((error: unknown) => {
    service.child.kill('SIGKILL');
    throw new Error(`the service did not get ready: ${String(error)}\n${output()}`);
  });
  exitedEarly.catch(() => undefined);
  return { ...service, url, port };
};

/** A tenant made with the platform key; `headers` carry its admin key. */
export const createTenant = async (url: string, name = 'shutdown') => {
  const tenant = await request(`${url}/v1/tenants`, {
    method: 'POST',
    body: { name, notificationEmail: `ops@${name}.test` },
    headers: { 'X-API-Key': platformKey },
  });
  if (tenant.status !== 201) throw new Error(`tenant: ${tenant.status} ${JSON.stringify(tenant.body)}`);
  return {
    tenantId: tenant.body.id as string,
    headers: { 'X-API-Key': tenant.body.adminApiKey as string },
  };
};

export interface RawResponse {
  status: number;
  headers: IncomingHttpHeaders;
  body: string;
}

/**
 * A POST whose body is sent in `chunks` pieces, `intervalMs` apart: a slow client. `sending` resolves once
 * the first piece is on its way, so the request is in flight at the server.
 */
export const slowPost = (
  url: string,
  headers: Record<string, string>,
  body: Buffer,
  { chunks, intervalMs, agent }: { chunks: number; intervalMs: number; agent?: Agent },
) => {
  let started!: () => void;
  const sending = new Promise<void>((resolve) => (started = resolve));
  const response = new Promise<RawResponse>((resolve, reject) => {
    const req = httpRequest(url, {
      method: 'POST',
      headers: { ...headers, 'content-length': String(body.length) },
      ...(agent ? { agent } : {}),
    });
    req.on('error', reject);
    req.on('response', (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => (text += chunk));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: text }));
      res.on('error', reject);
    });
    const size = Math.ceil(body.length / chunks);
    const send = (index: number) => {
      const piece = body.subarray(index * size, (index + 1) * size);
      if (index === chunks - 1 || piece.length === 0) return void req.end(piece);
      req.write(piece, () => (index === 0 ? started() : undefined));
      setTimeout(() => send(index + 1), intervalMs);
    };
    send(0);
  });
  return { sending, response };
};

/**
 * A GET sent over a raw connection in two halves: the request line and headers now, the blank line that
 * ends them on `finish()`. Between the two the connection carries a request in progress, so it is not idle.
 */
export const splitGet = async (port: number, path: string, headers: Record<string, string> = {}) => {
  const socket = connect(port, '127.0.0.1');
  await new Promise<void>((resolve, reject) => {
    socket.once('connect', resolve);
    socket.once('error', reject);
  });
  let text = '';
  socket.setEncoding('utf8');
  socket.on('data', (chunk: string) => (text += chunk));
  const ended = new Promise<void>((resolve) => socket.once('close', () => resolve()));
  const extra = Object.entries(headers).map(([name, value]) => `${name}: ${value}\r\n`);
  socket.write(`GET ${path} HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\n${extra.join('')}`);
  return {
    finish: async (): Promise<RawResponse> => {
      socket.write('\r\n');
      await ended;
      const [head = '', body = ''] = text.split('\r\n\r\n');
      const [statusLine = '', ...lines] = head.split('\r\n');
      const headers: IncomingHttpHeaders = {};
      for (const line of lines) {
        const at = line.indexOf(':');
        headers[line.slice(0, at).toLowerCase()] = line.slice(at + 1).trim();
      }
      return { status: Number(statusLine.split(' ')[1]), headers, body };
    },
  };
};
