import { lookup as dnsLookup, type LookupAddress } from 'node:dns';
import { isIP } from 'node:net';
import { Agent, request } from 'undici';
import { activeSpan, activeTraceparent, SpanStatusCode } from '../observability/tracing.js';
import { hostNotAllowed, isForbiddenAddress } from './ssrf.js';
import type { Outcome } from './delivery.decider.js';

export interface SenderSettings {
  timeoutMs: number;
  allowPrivateNetworks: boolean;
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
  (allowPrivateNetworks: boolean) =>
  (hostname: string, options: { all?: boolean }, callback: LookupCallback): void => {
    dnsLookup(hostname, { ...options, all: true }, (error, addresses) => {
      if (error) return callback(error, []);
      const forbidden = addresses.find((entry) => isForbiddenAddress(entry.address));
      if (forbidden && !allowPrivateNetworks) {
        return callback(
          new ForbiddenAddressError(`${hostname} resolves to a forbidden address (${forbidden.address})`),
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

/**
 * POSTs signed bodies to receivers: no redirects followed (a 3xx is a failure), a hard time-out over the
 * whole exchange, and connections only to addresses the SSRF rules allow, IP literals included.
 */
export const webhookSender = (settings: SenderSettings) => {
  const agent = new Agent({
    connect: { lookup: guardedLookup(settings.allowPrivateNetworks), timeout: settings.timeoutMs },
    headersTimeout: settings.timeoutMs,
    bodyTimeout: settings.timeoutMs,
    connections: 16,
  });

  /**
   * One POST. `signal` cuts it short (the worker stopping at its deadline): then it rejects with
   * AttemptAbortedError instead of answering an outcome, because the receiver did not fail.
   * With traces on, it sends the `traceparent` of the attempt's span, and records the outcome on that span.
   */
  const send = async (
    url: string,
    body: string,
    headers: Record<string, string>,
    signal?: AbortSignal,
  ): Promise<Outcome> => {
    const outcome = await post(url, body, headers, activeTraceparent(), signal);
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
    url: string,
    body: string,
    headers: Record<string, string>,
    traceparent: string | undefined,
    signal?: AbortSignal,
  ): Promise<Outcome> => {
    if (signal?.aborted) throw new AttemptAbortedError('the attempt was cut before it started');
    const started = performance.now();
    const elapsed = () => Math.round(performance.now() - started);
    try {
      const host = new URL(url).hostname.replace(/^\[|\]$/g, '');
      if (isIP(host) && isForbiddenAddress(host) && !settings.allowPrivateNetworks) {
        throw new ForbiddenAddressError(`${host} is a forbidden address`);
      }
      const response = await request(url, {
        method: 'POST',
        body,
        headers: {
          'content-type': 'application/json',
          'user-agent': 'observation-service-webhooks/1',
          ...(traceparent ? { traceparent } : {}),
          ...headers,
        },
        dispatcher: agent,
        signal: signal
          ? AbortSignal.any([signal, AbortSignal.timeout(settings.timeoutMs)])
          : AbortSignal.timeout(settings.timeoutMs),
      });
      // Read a little of the answer, so the connection can be reused, but never wait for a large body.
      await response.body.dump({ limit: 64 * 1024 });
      const ok = response.statusCode >= 200 && response.statusCode < 300;
      return {
        ok,
        statusCode: response.statusCode,
        durationMs: elapsed(),
        error: ok ? null : `HTTP ${response.statusCode}`,
      };
    } catch (error) {
      if (signal?.aborted) {
        throw new AttemptAbortedError(`the attempt was cut after ${elapsed()} ms: the service is stopping`);
      }
      const name = (error as Error).name;
      const message =
        name === 'TimeoutError' ||
        name === 'HeadersTimeoutError' ||
        name === 'BodyTimeoutError' ||
        name === 'ConnectTimeoutError'
          ? `no answer within ${settings.timeoutMs} ms`
          : (error as Error).message;
      return { ok: false, statusCode: null, durationMs: elapsed(), error: message };
    }
  };

  return { send, close: () => agent.close() };
};

export type WebhookSender = ReturnType<typeof webhookSender>;

/**
 * The check at creation: an absolute https URL (http only when allowed) whose host resolves to allowed
 * addresses. Every refused host gets the same words (`hostNotAllowed`): an internal name, one that does not
 * resolve and a private address are not told apart, so the check tells a caller nothing about DNS.
 */
export const checkReceiverUrl = async (
  url: string,
  { allowHttp, allowPrivateNetworks }: { allowHttp: boolean; allowPrivateNetworks: boolean },
): Promise<string | null> => {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return 'must be an absolute URL';
  }
  if (parsed.protocol !== 'https:' && !(allowHttp && parsed.protocol === 'http:')) {
    return allowHttp ? 'must be an http or https URL' : 'must be an https URL';
  }
  if (parsed.username || parsed.password) return 'must not carry credentials';
  if (allowPrivateNetworks) return null;
  const host = parsed.hostname.replace(/^\[|\]$/g, '');
  if (isIP(host)) return isForbiddenAddress(host) ? hostNotAllowed : null;
  try {
    const addresses = await new Promise<LookupAddress[]>((resolve, reject) =>
      dnsLookup(host, { all: true }, (error, found) => (error ? reject(error) : resolve(found))),
    );
    return addresses.length === 0 || addresses.some((entry) => isForbiddenAddress(entry.address))
      ? hostNotAllowed
      : null;
  } catch {
    return hostNotAllowed;
  }
};
