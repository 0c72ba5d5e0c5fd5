import { createServer } from 'node:http';

/**
 * The `webhooks` phase's receiver, a child process of its own on 127.0.0.1 (so that neither the service
 * nor the bench's raw client shares its event loop): `POST /hook` reads the body and answers 204, noting
 * the arrival time (ms since the epoch, fractional), the body and its signature headers.
 *   GET /arrivals    every arrival so far, as JSON     GET /count    how many     POST /reset   forgets them
 *   GET /health      200
 */

interface Arrival {
  at: number;
  body: string;
  headers: Record<string, string>;
}

let arrivals: Arrival[] = [];
const kept = ['content-type', 'user-agent', 'x-service-signature', 'webhook-id', 'webhook-timestamp'];
const now = () => performance.timeOrigin + performance.now();

const server = createServer((req, res) => {
  if (req.method === 'POST' && req.url === '/hook') {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const at = now();
      const headers: Record<string, string> = {};
      for (const name of [...kept, 'webhook-signature']) {
        const value = req.headers[name];
        if (typeof value === 'string') headers[name] = value;
      }
      arrivals.push({ at, body: Buffer.concat(chunks).toString('utf8'), headers });
      res.statusCode = 204;
      res.end();
    });
    return;
  }
  if (req.method === 'GET' && req.url === '/arrivals') {
    res.setHeader('content-type', 'application/json');
    res.end(JSON.stringify(arrivals));
    return;
  }
  if (req.method === 'GET' && req.url === '/count') {
    res.end(String(arrivals.length));
    return;
  }
  if (req.method === 'POST' && req.url === '/reset') {
    arrivals = [];
    res.statusCode = 204;
    res.end();
    return;
  }
  if (req.method === 'GET' && req.url === '/health') {
    res.end('ok');
    return;
  }
  res.statusCode = 404;
  res.end();
});
server.keepAliveTimeout = 30_000;
server.listen(Number(process.env.PORT), process.env.HOST ?? '127.0.0.1');
process.stdin.on('end', () => process.exit(0));
process.stdin.resume();
process.once('SIGTERM', () => {
  server.close();
  server.closeAllConnections();
  process.exit(0);
});
