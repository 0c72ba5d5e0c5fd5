import { createHmac, timingSafeEqual } from 'node:crypto';

/**
 * Both signatures of a delivery, over exactly the bytes sent:
 * - `X-Service-Signature`: lowercase hex HMAC-SHA256 of the raw body, keyed with the subscription secret;
 * - Standard Webhooks: `webhook-signature: v1,<base64 HMAC-SHA256 of "<id>.<timestamp>.<body>">`, with the
 *   secret's UTF-8 bytes as key, plus `webhook-id` and `webhook-timestamp` so receivers can reject replays.
 */
export const serviceSignature = (rawBody: string | Buffer, secret: string): string =>
  createHmac('sha256', secret).update(rawBody).digest('hex');

export const standardSignature = (
  id: string,
  timestampSeconds: number,
  rawBody: string,
  secret: string,
): string =>
  `v1,${createHmac('sha256', secret).update(`${id}.${timestampSeconds}.${rawBody}`).digest('base64')}`;

export const signatureHeaders = (
  id: string,
  rawBody: string,
  secret: string,
  now: Date,
): Record<string, string> => {
  const timestamp = Math.floor(now.getTime() / 1000);
  return {
    'X-Service-Signature': serviceSignature(rawBody, secret),
    'webhook-id': id,
    'webhook-timestamp': String(timestamp),
    'webhook-signature': standardSignature(id, timestamp, rawBody, secret),
  };
};

/** What a receiver runs: constant-time comparison of the hex signature over the raw body. */
export const verifyServiceSignature = (rawBody: string | Buffer, header: string, secret: string): boolean => {
  const expected = Buffer.from(serviceSignature(rawBody, secret), 'hex');
  const given = /^[0-9a-f]{64}$/.test(header) ? Buffer.from(header, 'hex') : Buffer.alloc(0);
  return given.length === expected.length && timingSafeEqual(given, expected);
};
