import { lookup as dnsLookup, type LookupAddress } from 'node:dns';
import { isIP } from 'node:net';
import { Agent, request } from 'undici';
import { LRUCache } from 'lru-cache';
import { activeSpan, activeTraceparent, SpanStatusCode } from '../observability/tracing.js';
import { hostNotAllowed, isAllowedAddress, isLoopbackAddress, type AddressRules } from './ssrf.js';
import type { Outcome } from './delivery.decider.js';

export interface SenderSettings extends AddressRules {
  timeoutMs: number;
}

export class ForbiddenAddressError extends Error {}

/** The caller cut the attempt (a shutdown past its deadline): there is no outcome to record. */
export class AttemptAbortedError extends Error {
  override readonly name = 'AttemptAbortedError';
}

type LookupCallback = (
  error: NodeJS.ErrnoException | null,
  address: string | LookupAddress[],
  family?: number,
) => void;

/**
 * Resolves like dns.lookup, then refuses forbidden addresses. Because the socket connects to the address
 * this returns, the check holds against DNS rebinding: it is made on the address actually dialled.
 */
const guardedLookup =
  (rules: AddressRules) =>
  (hostname: string, options: { all?: boolean }, callback: LookupCallback): void => {
    dnsLookup(hostname, { ...options, all: true }, (error, addresses) => {
      if (error) return callback(error, []);
      const forbidden = addresses.find((entry) => !isAllowedAddress(entry.address, rules));
      if (forbidden) {
        return callback(
          // Without the address: the attempt's error is the tenant's to read, and the service's resolver
          // would otherwise tell what a name inside its network stands for.
          new ForbiddenAddressError(`${hostname} resolves to a forbidden address`),
          [],
        );
      }
      if (options.all) return callback(null, addresses);
      const [first] = addresses;
      return first
        ? callback(null, first.address, first.family)
        : callback(new Error(`${hostname} has no address`), []);
    });
  };

/** What an attempt records of the receiver's answer: its first bytes, enough to show why it failed. */
/** The headers every attempt sends besides its signatures (and `traceparent` when traces are on). */
export const fixedHeaders = {
  'content-type': 'application/json',
  'user-agent': 'observation-service-webhooks/1',
} as const;

export const responseBodyLimit = 1024;
/** Read past the recorded part, so the connection can be reused, but never waiting for a large body. */
const drainLimit = 64 * 1024;

/**
 * The first `responseBodyLimit` bytes of an answer as text (an incomplete character at the cut dropped),
 * draining up to `drainLimit`; a larger body is abandoned, and its connection with it.
 */
const readStart = async (body: AsyncIterable<Buffer> & { destroy: () => void }): Promise<string> => {
  const kept: Buffer[] = [];
  let keptBytes = 0;
  let readBytes = 0;
  for await (const chunk of body) {
    readBytes += chunk.length;
    if (keptBytes < responseBodyLimit) {
      const part = chunk.subarray(0, responseBodyLimit - keptBytes);
      kept.push(part);
      keptBytes += part.length;
    }
    if (readBytes > drainLimit) {
      body.destroy();
      break;
    }
  }
  return new TextDecoder('utf-8', { fatal: false }).decode(Buffer.concat(kept), { stream: true });
};

/** Connections per receiver origin in each tenant's pool. */
const connectionsPerOrigin = 16;
/** Tenants' pools kept; past it, the one used least recently is closed (its requests in flight finish). */
const maxPools = 256;

/**
 * POSTs signed bodies to receivers: no redirects followed (a 3xx is a failure), a hard time-out over the
 * whole exchange, and connections only to addresses the SSRF rules allow, IP literals included.
 * Each tenant has its own connection pool (an undici Agent, 16 connections per origin), so that one
 * tenant's slow or many attempts cannot take the connections another tenant needs on a shared origin.
 */
export const webhookSender = (settings: SenderSettings) => {
  const pools = new LRUCache<string, Agent>({
    max: maxPools,
    // Its requests in flight finish first; a pool that fails to close has nothing left to lose.
    dispose: (agent, _tenantId, reason) => {
      if (reason === 'evict') agent.close().catch(() => undefined);
    },
  });
  const newPool = () =>
    new Agent({
      connect: { lookup: guardedLookup(settings), timeout: settings.timeoutMs },
      headersTimeout: settings.timeoutMs,
      bodyTimeout: settings.timeoutMs,
      connections: connectionsPerOrigin,
    });
  /** The tenant's pool, now the most recently used. */
  const poolOf = (tenantId: string): Agent => {
    let pool = pools.get(tenantId);
    if (!pool) {
      pool = newPool();
      pools.set(tenantId, pool);
    }
    return pool;
  };

  /**
   * One POST, in the pool of the tenant whose attempt it is. `signal` cuts it short (the worker stopping at
   * its deadline): then it rejects with AttemptAbortedError instead of answering an outcome, because the
   * receiver did not fail.
   * With traces on, it sends the `traceparent` of the attempt's span, and records the outcome on that span.
   */
  const send = async (
    tenantId: string,
    url: string,
    body: string,
    headers: Record<string, string>,
    signal?: AbortSignal,
  ): Promise<Outcome> => {
    const outcome = await post(poolOf(tenantId), url, body, headers, activeTraceparent(), signal);
    const span = activeSpan();
    if (span) {
      span.setAttribute('http.request.method', 'POST');
      if (URL.canParse(url)) span.setAttribute('server.address', new URL(url).hostname);
      if (outcome.statusCode !== null) span.setAttribute('http.response.status_code', outcome.statusCode);
      if (!outcome.ok) span.setStatus({ code: SpanStatusCode.ERROR, message: outcome.error ?? 'failed' });
    }
    return outcome;
  };

  const post = async (
    agent: Agent,
    url: string,
    body: string,
    headers: Record<string, string>,
    traceparent: string | undefined,
    signal?: AbortSignal,
  ): Promise<Outcome> => {
    if (signal?.aborted) throw new AttemptAbortedError('the attempt was cut before it started');
    const started = performance.now();
    const elapsed = () => Math.round(performance.now() - started);
    /** The receiver's status once its headers are in: kept when its body then fails to arrive in time. */
    let statusCode: number | null = null;
    try {
      const host = new URL(url).hostname.replace(/^\[|\]$/g, '');
      if (isIP(host) && !isAllowedAddress(host, settings)) {
        throw new ForbiddenAddressError(`${host} is a forbidden address`);
      }
      const response = await request(url, {
        method: 'POST',
        body,
        headers: {
          ...fixedHeaders,
          ...(traceparent ? { traceparent } : {}),
          ...headers,
        },
        dispatcher: agent,
        signal: signal
          ? AbortSignal.any([signal, AbortSignal.timeout(settings.timeoutMs)])
          : AbortSignal.timeout(settings.timeoutMs),
      });
      statusCode = response.statusCode;
      const responseBody = await readStart(response.body);
      const ok = statusCode >= 200 && statusCode < 300;
      return { ok, statusCode, durationMs: elapsed(), error: ok ? null : `HTTP ${statusCode}`, responseBody };
    } catch (error) {
      if (signal?.aborted) {
        throw new AttemptAbortedError(`the attempt was cut after ${elapsed()} ms: the service is stopping`);
      }
      const name = (error as Error).name;
      const timedOut =
        name === 'TimeoutError' ||
        name === 'HeadersTimeoutError' ||
        name === 'BodyTimeoutError' ||
        name === 'ConnectTimeoutError';
      const message = !timedOut
        ? (error as Error).message
        : statusCode === null
          ? `no answer within ${settings.timeoutMs} ms`
          : `HTTP ${statusCode}, but the rest of the answer did not arrive within ${settings.timeoutMs} ms`;
      return { ok: false, statusCode, durationMs: elapsed(), error: message };
    }
  };

  return {
    send,
    close: async () => {
      const closing = [...pools.values()].map((agent) => agent.close());
      pools.clear();
      await Promise.all(closing);
    },
  };
};

export type WebhookSender = ReturnType<typeof webhookSender>;

/** The addresses a host name resolves to; none when it does not resolve. */
const resolve = (host: string): Promise<LookupAddress[]> =>
  new Promise((done) => dnsLookup(host, { all: true }, (error, found) => done(error ? [] : found)));

/**
 * The check at creation: an absolute https URL whose host resolves to allowed addresses only (ssrf.ts). An
 * `http` URL is allowed with WEBHOOK_ALLOW_HTTP, and for a loopback receiver wherever loopback is allowed
 * (outside production by default), since a local receiver has no certificate. Every refused host gets the
 * same words (`hostNotAllowed`): an internal name, one that does not resolve and a private address are not
 * told apart, so the check tells a caller nothing about DNS.
 */
export const checkReceiverUrl = async (
  url: string,
  rules: AddressRules & { allowHttp: boolean },
): Promise<string | null> => {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return 'must be an absolute URL';
  }
  const httpsOnly = rules.allowLoopback
    ? 'must be an https URL (http only for a loopback receiver, or with WEBHOOK_ALLOW_HTTP=true)'
    : 'must be an https URL (http only with WEBHOOK_ALLOW_HTTP=true)';
  if (parsed.protocol !== 'https:' && parsed.protocol !== 'http:')
    return rules.allowHttp ? 'must be an http or https URL' : httpsOnly;
  if (parsed.username || parsed.password) return 'must not carry credentials';
  const schemeAllowed = parsed.protocol === 'https:' || rules.allowHttp;
  if (rules.allowPrivateNetworks && schemeAllowed) return null;
  const host = parsed.hostname.replace(/^\[|\]$/g, '');
  const addresses = isIP(host) ? [host] : (await resolve(host)).map((entry) => entry.address);
  const allowed = addresses.length > 0 && addresses.every((address) => isAllowedAddress(address, rules));
  const loopbackOnly =
    rules.allowLoopback && addresses.length > 0 && addresses.every((address) => isLoopbackAddress(address));
  if (!schemeAllowed && !loopbackOnly) return httpsOnly;
  return allowed ? null : hostNotAllowed;
};
