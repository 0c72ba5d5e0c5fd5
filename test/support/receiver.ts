import { createHmac, timingSafeEqual } from 'node:crypto';
import { createServer, type IncomingHttpHeaders, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { eventually } from './wait.js';

/** One request a receiver got, whatever it answered. */
export interface Received {
  path: string;
  headers: IncomingHttpHeaders;
  rawBody: string;
  /** The parsed envelope when the body is JSON. */
  body: any;
  /** Date.now() when the request arrived. */
  at: number;
  /** Whether both signatures matched the raw body. */
  verified: boolean;
  /** What the receiver answered; null when it never answered. */
  status: number | null;
}

/**
 * What the receiver does with a correctly signed request: a status, one with headers and a body (after
 * `afterMs`, a receiver that takes its time), or hang.
 */
export type Answer =
  number | { status: number; headers?: Record<string, string>; body?: string; afterMs?: number } | 'hang';

const equal = (a: string, b: string) =>
  a.length === b.length && timingSafeEqual(Buffer.from(a), Buffer.from(b));

/** The HMAC key, as docs/webhooks.md says: the base64-decoded rest of a `whsec_` secret, else its UTF-8. */
const keyOf = (secret: string): Buffer =>
  secret.startsWith('whsec_') ? Buffer.from(secret.slice(6), 'base64') : Buffer.from(secret, 'utf8');

/**
 * Checks a delivery as a receiver written from the documentation would: the hex HMAC-SHA256 of the raw
 * body in X-Service-Signature, and the Standard Webhooks signature over "<id>.<timestamp>.<body>".
 */
export const verifySignatures = (headers: IncomingHttpHeaders, rawBody: string, secret: string): boolean => {
  const service = headers['x-service-signature'];
  const id = headers['webhook-id'];
  const timestamp = headers['webhook-timestamp'];
  const standard = headers['webhook-signature'];
  if (typeof service !== 'string' || typeof id !== 'string' || typeof timestamp !== 'string') return false;
  if (typeof standard !== 'string') return false;
  const hex = createHmac('sha256', keyOf(secret)).update(rawBody).digest('hex');
  const base64 = createHmac('sha256', keyOf(secret)).update(`${id}.${timestamp}.${rawBody}`).digest('base64');
  // The header may carry several space-separated signatures; one matching is enough.
  const standardOk = standard.split(' ').some((candidate) => equal(candidate, `v1,${base64}`));
  return equal(service, hex) && standardOk;
};

/**
 * A real HTTP receiver on 127.0.0.1 that verifies both signatures over the raw body and answers 401 when
 * they do not match; otherwise it answers what `answer` says for the n-th request (1-based).
 */
export const startReceiver = async (
  secret: string,
  answer: (n: number, request: Received) => Answer = () => 204,
) => {
  const received: Received[] = [];
  const hanging = new Set<ServerResponse>();
  let waiters: (() => void)[] = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const rawBody = Buffer.concat(chunks).toString('utf8');
      let body: unknown;
      try {
        body = JSON.parse(rawBody);
      } catch {
        // Not JSON (a test sending garbage): the receiver still records and verifies it.
      }
      const record: Received = {
        path: req.url ?? '/',
        headers: req.headers,
        rawBody,
        body,
        at: Date.now(),
        verified: verifySignatures(req.headers, rawBody, secret),
        status: null,
      };
      received.push(record);
      const wanted = record.verified ? answer(received.length, record) : 401;
      if (wanted === 'hang') {
        hanging.add(res);
      } else {
        const {
          status,
          headers = {},
          body = '',
          afterMs = 0,
        } = typeof wanted === 'number' ? { status: wanted } : wanted;
        record.status = status;
        const send = () => res.writeHead(status, headers).end(body);
        if (afterMs > 0) setTimeout(send, afterMs);
        else send();
      }
      const ready = waiters;
      waiters = [];
      for (const wake of ready) wake();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;

  /** Resolves with the requests once there are at least `count`; rejects after `timeoutMs`. */
  const waitFor = async (count: number, timeoutMs = 10_000): Promise<Received[]> => {
    const deadline = Date.now() + timeoutMs;
    while (received.length < count) {
      const left = deadline - Date.now();
      if (left <= 0) throw new Error(`expected ${count} requests, the receiver got ${received.length}`);
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, left);
        waiters.push(() => {
          clearTimeout(timer);
          resolve();
        });
      });
    }
    return received;
  };

  return {
    port,
    url: `http://127.0.0.1:${port}/hooks`,
    received,
    waitFor,
    close: async () => {
      for (const res of hanging) res.destroy();
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    },
  };
};

export type Receiver = Awaited<ReturnType<typeof startReceiver>>;

/** A receiver on loopback that holds every request until the test answers it. */
export const holdingReceiver = async () => {
  const held: { respond: (status: number) => void }[] = [];
  const server: Server = createServer((req, res) => {
    req.resume();
    req.on('end', () => held.push({ respond: (status) => res.writeHead(status).end() }));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  /** The n-th request (1-based), once it has arrived. */
  const request = (n: number) =>
    eventually(() => Promise.resolve(held[n - 1]), 15_000, `request ${n} at the receiver`);
  const close = async () => {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  };
  return { url: `http://127.0.0.1:${port}/hooks`, held, request, close };
};
