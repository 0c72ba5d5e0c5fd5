import { createHmac, timingSafeEqual } from 'node:crypto';
import { signingKey } from './secrets.js';

/**
 * Both signatures of a delivery, over exactly the bytes sent, keyed with the secret's key (secrets.ts: the
 * decoded bytes of a `whsec_` secret, the UTF-8 bytes of a plain one):
 * - `X-Service-Signature`: lowercase hex HMAC-SHA256 of the raw body;
 * - Standard Webhooks: `webhook-signature: v1,<base64 HMAC-SHA256 of "<id>.<timestamp>.<body>">`, plus
 *   `webhook-id` and `webhook-timestamp` so receivers can reject replays. After a rotation, the previous
 *   secret signs too while it is still valid: the header then lists both, separated by a space, as the
 *   standard provides for, so receivers can move to the new secret without losing a delivery.
 */
export const serviceSignature = (rawBody: string | Buffer, secret: string): string =>
  createHmac('sha256', signingKey(secret)).update(rawBody).digest('hex');

export const standardSignature = (
  id: string,
  timestampSeconds: number,
  rawBody: string,
  secret: string,
): string =>
  `v1,${createHmac('sha256', signingKey(secret)).update(`${id}.${timestampSeconds}.${rawBody}`).digest('base64')}`;

export const signatureHeaders = (
  id: string,
  rawBody: string,
  secret: string,
  now: Date,
  previousSecret?: string,
): Record<string, string> => {
  const timestamp = Math.floor(now.getTime() / 1000);
  const signatures = [secret, ...(previousSecret === undefined ? [] : [previousSecret])].map((key) =>
    standardSignature(id, timestamp, rawBody, key),
  );
  return {
    'X-Service-Signature': serviceSignature(rawBody, secret),
    'webhook-id': id,
    'webhook-timestamp': String(timestamp),
    'webhook-signature': signatures.join(' '),
  };
};

/** What a receiver runs: constant-time comparison of the hex signature over the raw body. */
export const verifyServiceSignature = (rawBody: string | Buffer, header: string, secret: string): boolean => {
  const expected = Buffer.from(serviceSignature(rawBody, secret), 'hex');
  const given = /^[0-9a-f]{64}$/.test(header) ? Buffer.from(header, 'hex') : Buffer.alloc(0);
  return given.length === expected.length && timingSafeEqual(given, expected);
};
