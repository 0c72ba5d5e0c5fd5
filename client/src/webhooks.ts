import { createHmac, timingSafeEqual } from 'node:crypto';

/**
 * Verifying deliveries, for receivers (docs/webhooks.md#verifying-the-signature). Both checks work on the
 * raw body exactly as received, before any JSON parsing, and compare in constant time.
 */

export type RawBody = string | Uint8Array;

/** Request headers as Node's `IncomingHttpHeaders` or a fetch `Headers`: looked up case-insensitively. */
export type WebhookHeaders = Headers | Record<string, string | string[] | undefined>;

const bytesOf = (raw: RawBody): Buffer =>
  typeof raw === 'string'
    ? Buffer.from(raw, 'utf8')
    : Buffer.from(raw.buffer, raw.byteOffset, raw.byteLength);

/**
 * The HMAC key of a subscription secret: the base64-decoded rest of a `whsec_` secret (the Standard
 * Webhooks form, which the API shows), or the UTF-8 bytes of a plain one chosen at creation.
 */
export const webhookSigningKey = (secret: string): Buffer =>
  secret.startsWith('whsec_') ? Buffer.from(secret.slice(6), 'base64') : Buffer.from(secret, 'utf8');

const sameBytes = (a: Buffer, b: Buffer): boolean => a.length === b.length && timingSafeEqual(a, b);

const headerOf = (headers: WebhookHeaders, name: string): string | undefined => {
  if (typeof (headers as Headers).get === 'function') return (headers as Headers).get(name) ?? undefined;
  const record = headers as Record<string, string | string[] | undefined>;
  const key = Object.keys(record).find((candidate) => candidate.toLowerCase() === name);
  const value = key === undefined ? undefined : record[key];
  return Array.isArray(value) ? value.join(', ') : value;
};

/**
 * Checks `X-Service-Signature`: the lowercase hex HMAC-SHA256 of the raw body, keyed with the subscription
 * secret's key (`webhookSigningKey`). Pass the header's value as received (a missing or malformed one is
 * simply not valid).
 */
export const verifyWebhookSignature = (
  rawBody: RawBody,
  header: string | string[] | null | undefined,
  secret: string,
): boolean => {
  const value = (Array.isArray(header) ? header[0] : header)?.trim().toLowerCase() ?? '';
  const expected = createHmac('sha256', webhookSigningKey(secret)).update(bytesOf(rawBody)).digest();
  const given = /^[0-9a-f]{64}$/.test(value) ? Buffer.from(value, 'hex') : Buffer.alloc(0);
  return sameBytes(given, expected);
};

export interface StandardWebhookOptions {
  /** How far `webhook-timestamp` may be from now, either way: 300 s unless told. */
  toleranceSeconds?: number | undefined;
  /** The time to check against (a Date or epoch milliseconds); the clock unless told. */
  now?: Date | number | undefined;
}

export type StandardWebhookCheck =
  | { ok: true; id: string; timestamp: number }
  | {
      ok: false;
      reason: 'missing-headers' | 'invalid-timestamp' | 'timestamp-out-of-tolerance' | 'invalid-signature';
    };

/**
 * Checks the Standard Webhooks headers (https://www.standardwebhooks.com/) and says why a delivery fails:
 * `webhook-signature` holds one or more space-separated `v1,<base64>` signatures, each the HMAC-SHA256 of
 * `<webhook-id>.<webhook-timestamp>.<raw body>` keyed with the secret's key (`webhookSigningKey`: the
 * decoded bytes of a `whsec_` secret, as the standard says); one matching is enough. A timestamp
 * further than `toleranceSeconds` from now is refused, so a captured delivery cannot be replayed later.
 */
export const checkStandardWebhook = (
  rawBody: RawBody,
  headers: WebhookHeaders,
  secret: string,
  { toleranceSeconds = 300, now = Date.now() }: StandardWebhookOptions = {},
): StandardWebhookCheck => {
  const id = headerOf(headers, 'webhook-id');
  const timestampText = headerOf(headers, 'webhook-timestamp');
  const signatures = headerOf(headers, 'webhook-signature');
  if (!id || !timestampText || !signatures) return { ok: false, reason: 'missing-headers' };
  if (!/^\d{1,15}$/.test(timestampText.trim())) return { ok: false, reason: 'invalid-timestamp' };
  const timestamp = Number(timestampText.trim());
  const nowSeconds = (typeof now === 'number' ? now : now.getTime()) / 1000;
  if (Math.abs(nowSeconds - timestamp) > toleranceSeconds) {
    return { ok: false, reason: 'timestamp-out-of-tolerance' };
  }
  const expected = createHmac('sha256', webhookSigningKey(secret))
    .update(`${id}.${timestampText.trim()}.`)
    .update(bytesOf(rawBody))
    .digest();
  // Every candidate is compared, so the time taken does not say which one matched.
  let matched = false;
  for (const candidate of signatures.split(' ')) {
    const [version, signature] = candidate.split(',', 2);
    if (version !== 'v1' || !signature || !/^[A-Za-z0-9+/]+={0,2}$/.test(signature)) continue;
    if (sameBytes(Buffer.from(signature, 'base64'), expected)) matched = true;
  }
  return matched ? { ok: true, id, timestamp } : { ok: false, reason: 'invalid-signature' };
};

/** Whether a delivery's Standard Webhooks headers are valid: see `checkStandardWebhook` for the reason. */
export const verifyStandardWebhook = (
  rawBody: RawBody,
  headers: WebhookHeaders,
  secret: string,
  options: StandardWebhookOptions = {},
): boolean => checkStandardWebhook(rawBody, headers, secret, options).ok;
